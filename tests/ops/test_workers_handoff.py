"""`podsync serve --workers 2` on SQLite hands every worker's sync batches to worker 0,
which commits them with its own (`storage/sqlite_handoff.py`). kill -9 of either
worker while clients write through the Open Podcast API and the gpodder episode
upload: nothing acknowledged is lost, no batch is stored in part, the killed worker
is replaced, the writes go on, and `podsync db check` passes. The writer's death
leaves the follower's jobs in flight unanswered (a 503 or a cut connection, never a
200); the follower's death loses nothing the writer acknowledged."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import PASSWORD
from tests.support.ledger import GpodderWriter, LedgerWriter, OpaWriter, db_check
from tests.support.workers_support import ServerTree

CLIENTS = 4  # per API
TIMEOUT = aiohttp.ClientTimeout(total=20)
KILLED = r"worker {index} \(pid {pid}\) was killed by signal 9 \(SIGKILL\); starting another"


async def until_acknowledged(writers: list[LedgerWriter], more: int) -> None:
    wanted = [len(w.ledger.acknowledged) + more for w in writers]
    async with asyncio.timeout(30):
        while any(  # noqa: ASYNC110 - polls what the clients record
            len(w.ledger.acknowledged) < n for w, n in zip(writers, wanted, strict=True)
        ):
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("killed", [0, 1], ids=["the-writer", "the-follower"])
async def test_kill_9_of_a_worker_under_write_load_loses_nothing_acknowledged(
    tmp_path: Path, killed: int
) -> None:
    tree = ServerTree(tmp_path)
    added = tree.cli("user", "add", "alice", "--password-stdin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    writers: list[LedgerWriter] = [OpaWriter(), GpodderWriter()]
    with tree:
        pids = tree.worker_pids()
        connector = aiohttp.TCPConnector(force_close=True)  # each request: either worker
        async with aiohttp.ClientSession(
            tree.base_url, connector=connector, timeout=TIMEOUT
        ) as session:
            for writer in writers:
                await writer.prepare(session)
            stop = asyncio.Event()
            clients = [
                asyncio.create_task(writer.keep_posting(session, f"{writer.name}{c}", stop))
                for writer in writers
                for c in range(CLIENTS)
            ]
            try:
                await until_acknowledged(writers, 10)
                os.kill(pids[killed], signal.SIGKILL)
                await until_acknowledged(writers, 10)  # and the writes go on
            finally:
                stop.set()
                await asyncio.gather(*clients)
            for writer in writers:
                await writer.check_survivors(session)
        tree.wait_for(re.compile(KILLED.format(index=killed, pid=pids[killed])))
        assert tree.worker_pids()[killed] != pids[killed]
        assert tree.stop() == 0
    checked = db_check(tree.config_path)
    assert checked.returncode == 0, checked.stderr
