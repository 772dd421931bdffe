"""Crash safety of gpodder episode uploads: clients post batches of play actions (as
AntennaPod does) while the server process is SIGKILLed. After each restart, every
acknowledged action is pulled back exactly once with the bytes it was sent as, every
batch in flight is there whole or not at all, a resent batch adds nothing, and
`podsync db check` passes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from tests.conftest import PASSWORD, with_accounts
from tests.support.ledger import GpodderWriter, db_check, hammer
from tests.support.server_process import ServerProcess, free_port, write_server_config

CLIENTS = 4
KILL_AFTER = (0.05, 0.3)


async def test_acknowledged_episode_actions_survive_sigkill(tmp_path: Path) -> None:
    port = free_port()
    config = write_server_config(tmp_path, port)
    await with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD))
    server = ServerProcess(tmp_path / "server.toml", port, tmp_path / "server.log")
    writer = GpodderWriter()
    timeout = aiohttp.ClientTimeout(total=10)
    try:
        for round_no, kill_after in enumerate(KILL_AFTER):
            await asyncio.to_thread(server.start)
            async with aiohttp.ClientSession(server.base_url, timeout=timeout) as session:
                await writer.check_survivors(session)
                await hammer(session, [(writer, CLIENTS)], f"r{round_no}", kill_after, server.kill)
            assert writer.ledger.in_flight >= CLIENTS
        await asyncio.to_thread(server.start)
        async with aiohttp.ClientSession(server.base_url, timeout=timeout) as session:
            await writer.check_survivors(session)
    finally:
        server.stop()
    checked = db_check(tmp_path / "server.toml")
    assert checked.returncode == 0, checked.stderr
