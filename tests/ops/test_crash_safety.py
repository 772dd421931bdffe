"""Crash safety: clients post batches while the server process is SIGKILLed.

After each restart, every action that was acknowledged (200 received) is there,
every batch that was in flight is there whole or not at all, a replayed batch
answers as it did the first time, and `podsync db check` passes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from tests.conftest import PASSWORD, with_accounts
from tests.support.ledger import OpaWriter, db_check, hammer
from tests.support.server_process import ServerProcess, free_port, write_server_config

CLIENTS = 6
# When to kill the server in each round: seconds after the round's first few
# acknowledgements (so that the kill always lands while clients are writing, even on
# a slow machine).
KILL_AFTER = (0.05, 0.25, 0.5)


async def test_acknowledged_actions_survive_sigkill_of_the_server(tmp_path: Path) -> None:
    port = free_port()
    config = write_server_config(tmp_path, port)
    await with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD))
    server = ServerProcess(tmp_path / "server.toml", port, tmp_path / "server.log")
    writer = OpaWriter()
    timeout = aiohttp.ClientTimeout(total=10)
    try:
        for round_no, kill_after in enumerate(KILL_AFTER):
            await asyncio.to_thread(server.start)
            async with aiohttp.ClientSession(server.base_url, timeout=timeout) as session:
                await writer.check_survivors(session)
                await hammer(session, [(writer, CLIENTS)], f"r{round_no}", kill_after, server.kill)
            # Every client's last batch was cut off by the kill, unacknowledged.
            assert writer.ledger.in_flight >= CLIENTS
        await asyncio.to_thread(server.start)
        async with aiohttp.ClientSession(server.base_url, timeout=timeout) as session:
            await writer.check_survivors(session)
    finally:
        server.stop()
    checked = db_check(tmp_path / "server.toml")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith(f"database {config.database.path} is ok")
