"""A write cancelled during its COMMIT stays cancelled, and the writer stays usable.

The COMMIT goes on in the commit thread after the awaiting task is cancelled, so a
ROLLBACK that followed would find no transaction. That error must not replace the
CancelledError: the pruner in podsync.web.app catches Exception, so a swallowed
cancellation left it sleeping for an hour and shutdown (SIGTERM, test teardown)
waiting for it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from podsync.storage.sqlite import Database
from podsync.storage.sqlite_connection import BUSY_TIMEOUT_MS


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


async def test_a_writer_cancelled_twice_while_its_begin_waits_keeps_the_lock(
    tmp_path: Path,
) -> None:
    """While another process holds SQLite's write lock, BEGIN waits on the commit
    thread. A writer cancelled twice meanwhile must not let the next writer use the
    connection before that BEGIN is over (two threads on one sqlite3 connection
    crashed the interpreter)."""
    path = str(tmp_path / "podsync.db")
    async with Database(path, "full") as db:
        async with db.write() as conn:
            await conn.execute("CREATE TABLE t (n INTEGER)")
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # "another process" holds the lock

            async def write(n: int) -> None:
                async with db.write() as conn:
                    await conn.execute("INSERT INTO t VALUES (?)", (n,))

            first = asyncio.create_task(write(1))
            await asyncio.sleep(0.2)  # its BEGIN now waits on the commit thread
            first.cancel()
            await asyncio.sleep(0.05)
            first.cancel()
            second = asyncio.create_task(write(2))
            started = time.monotonic()
            await asyncio.sleep(0.2)
            # The old code let the second writer's BEGIN run on the loop into the
            # connection the commit thread still used: the loop froze for the whole
            # busy timeout (10 s), when it did not crash.
            assert time.monotonic() - started < 0.2 + BUSY_TIMEOUT_MS / 2000
            assert not second.done()  # still behind the first writer's BEGIN
            other.execute("COMMIT")
            with pytest.raises(asyncio.CancelledError):
                await first
            await second
        finally:
            other.close()
        async with db.read() as conn:
            assert await conn.fetch_all("SELECT n FROM t") == [(2,)]
