"""kill -9 of a whole `podsync serve --workers 2` tree (the parent and both workers at
once, as a power cut or a container's OOM kill ends them) while clients write
through both APIs, on both engines: after each restart every acknowledged action
of either API is there, no batch is stored in part, a replay answers as before,
and on SQLite `podsync db check` passes."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from tests.conftest import PASSWORD
from tests.support.ledger import GpodderWriter, OpaWriter, db_check, hammer
from tests.support.workers_support import ServerTree

pytestmark = pytest.mark.both_engines

KILL_AFTER = (0.1, 0.4)
TIMEOUT = aiohttp.ClientTimeout(total=20)


async def test_acknowledged_writes_of_both_apis_survive_kill_9_of_the_tree(
    tmp_path: Path, database_url: str
) -> None:
    database = f'url = "{database_url}"' if database_url else ""
    tree = ServerTree(tmp_path, workers=2, database=database)
    added = tree.cli("user", "add", "alice", "--password-stdin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    writers = [(OpaWriter(), 3), (GpodderWriter(), 3)]
    try:
        for round_no, kill_after in enumerate(KILL_AFTER):
            tree.start()
            # A connection per request: each goes to whichever worker accepts it.
            connector = aiohttp.TCPConnector(force_close=True)
            async with aiohttp.ClientSession(
                tree.base_url, connector=connector, timeout=TIMEOUT
            ) as session:
                for writer, _ in writers:
                    await writer.check_survivors(session)
                await hammer(session, writers, f"r{round_no}", kill_after, tree.kill_tree)
        tree.start()
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(
            tree.base_url, connector=connector, timeout=TIMEOUT
        ) as session:
            for writer, _ in writers:
                await writer.check_survivors(session)
        assert tree.stop() == 0
    finally:
        tree.kill_tree()
    if not database_url:
        checked = db_check(tree.config_path)
        assert checked.returncode == 0, checked.stderr
