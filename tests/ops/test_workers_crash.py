"""kill -9 of a whole `podsync serve --workers 2` tree (the parent and both workers at
once, as a power cut or a container's OOM kill ends them) while clients write
through both APIs, on both engines: after each restart every acknowledged action
of either API is there, no batch is stored in part, a replay answers as before,
and on SQLite `podsync db check` passes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import PASSWORD
from tests.ops import test_crash_safety as opa
from tests.ops import test_crash_safety_gpodder as gpodder
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
    opa_ledger, gpodder_ledger = opa.Ledger(), gpodder.Ledger()
    try:
        for round_no, kill_after in enumerate(KILL_AFTER):
            tree.start()
            # A connection per request: each goes to whichever worker accepts it.
            connector = aiohttp.TCPConnector(force_close=True)
            async with aiohttp.ClientSession(
                tree.base_url, connector=connector, timeout=TIMEOUT
            ) as session:
                await opa.check_survivors(session, opa_ledger)
                await gpodder.check_survivors(session, gpodder_ledger)
                acknowledged = len(opa_ledger.acknowledged), gpodder_ledger.acknowledged()
                auth = await opa.login(session)
                clients = [
                    asyncio.create_task(
                        opa.post_until_refused(session, auth, opa_ledger, f"r{round_no}o{c}")
                    )
                    for c in range(3)
                ] + [
                    asyncio.create_task(
                        gpodder.post_until_refused(session, gpodder_ledger, f"r{round_no}g{c}")
                    )
                    for c in range(3)
                ]
                async with asyncio.timeout(30):
                    while (  # noqa: ASYNC110 - polls what the clients record
                        len(opa_ledger.acknowledged) < acknowledged[0] + 3
                        or gpodder_ledger.acknowledged() < acknowledged[1] + 3
                    ):
                        await asyncio.sleep(0.01)
                await asyncio.sleep(kill_after)
                tree.kill_tree()
                await asyncio.gather(*clients)
        tree.start()
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(
            tree.base_url, connector=connector, timeout=TIMEOUT
        ) as session:
            await opa.check_survivors(session, opa_ledger)
            await gpodder.check_survivors(session, gpodder_ledger)
        assert tree.stop() == 0
    finally:
        tree.kill_tree()
    if not database_url:
        checked = opa.db_check(tree.config_path)
        assert checked.returncode == 0, checked.stderr
