"""Account commands and the gpodder data: `user delete` removes devices and episode
actions (foreign keys cascade), `user list` shows the device count."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.web.keys import DB
from tests.conftest import run_cli
from tests.support.gpodder_support import basic


async def test_user_delete_removes_devices_and_episode_actions(
    gp: TestClient[Any, Any], config: Config
) -> None:
    await gp.post("/api/2/devices/alice/phone.json", json={"type": "mobile"}, headers=basic())
    await gp.post("/api/2/devices/bob/tab.json", json={}, headers=basic("bob"))
    action = {"podcast": "http://e.com/f", "episode": "http://e.com/1", "action": "new"}
    assert (
        await gp.post("/api/2/episodes/alice.json", json=[action], headers=basic())
    ).status == 200
    assert (
        await gp.post("/api/2/episodes/bob.json", json=[action], headers=basic("bob"))
    ).status == 200

    listed = await asyncio.to_thread(run_cli, config, "user", "list")
    rows = {line.split("\t")[0]: line.split("\t") for line in listed.stdout.splitlines()}
    assert (rows["alice"][4], rows["bob"][4], rows["carol"][4]) == ("1", "1", "0")

    deleted = await asyncio.to_thread(run_cli, config, "user", "delete", "alice", "--yes")
    assert deleted.exit_code == 0
    async with gp.app[DB].read() as conn:
        devices = await conn.fetch_all("SELECT device_id FROM gpodder_devices")
        actions = await conn.fetch_all("SELECT count(*) FROM episode_actions")
    assert [r[0] for r in devices] == ["tab"]
    assert list(actions) == [(1,)]
