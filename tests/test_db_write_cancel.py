"""A write cancelled during its COMMIT stays cancelled, and the writer stays usable.

The COMMIT goes on in the commit thread after the awaiting task is cancelled, so a
ROLLBACK that followed would find no transaction. That error must not replace the
CancelledError: the pruner in podsync.web.app catches Exception, so a swallowed
cancellation left it sleeping for an hour and shutdown (SIGTERM, test teardown)
waiting for it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from podsync.db import Database


async def test_cancelling_a_write_during_commit_raises_cancelled_error(tmp_path: Path) -> None:
    async with Database(str(tmp_path / "podsync.db"), "full") as db:
        async with db.write() as conn:
            await conn.execute("CREATE TABLE t (n INTEGER)")
        for n in range(30):
            body_done = asyncio.Event()

            async def write_one(n: int = n, body_done: asyncio.Event = body_done) -> None:
                async with db.write() as conn:
                    await conn.execute("INSERT INTO t VALUES (?)", (n,))
                    body_done.set()
                # Leaving the block awaits COMMIT: that is where the cancel lands.

            task = asyncio.create_task(write_one())
            await body_done.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        # The writer is not left inside a transaction: the next write works.
        async with db.write() as conn:
            await conn.execute("INSERT INTO t VALUES (99)")
        async with db.read() as conn:
            row = await conn.fetch_one("SELECT count(*) FROM t")
        assert row is not None and row[0] >= 1
