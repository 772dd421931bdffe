"""Crash safety of gpodder episode uploads: clients post batches of play actions (as
AntennaPod does) while the server process is SIGKILLed. After each restart, every
acknowledged action is pulled back exactly once with the bytes it was sent as, every
batch in flight is there whole or not at all, a resent batch adds nothing, and
`podsync db check` passes."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import aiohttp

from tests.conftest import PASSWORD, with_accounts
from tests.ops.test_crash_safety import db_check
from tests.support.server_process import ServerProcess, free_port, write_server_config

CLIENTS = 4
BATCH = 30
KILL_AFTER = (0.05, 0.3)
FIRST_ACKS = 3
URL = "/api/2/episodes/alice.json"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()}


def new_batch(tag: str) -> list[dict[str, Any]]:
    return [
        {
            "podcast": f"https://crash.example/{tag}/feed.xml",
            "episode": f"https://crash.example/{tag}/{i}.mp3",
            "guid": f"{tag}-{i}",
            "action": "play",
            "timestamp": "2026-01-01T00:00:00",
            "started": 0,
            "position": i + 1,
            "total": 3600,
            "device": "phone",
        }
        for i in range(BATCH)
    ]


class Ledger:
    def __init__(self) -> None:
        self.sent: list[tuple[list[dict[str, Any]], bool]] = []  # (batch, acknowledged)

    def acknowledged(self) -> int:
        return sum(1 for _, ok in self.sent if ok)


async def post_until_refused(session: aiohttp.ClientSession, ledger: Ledger, tag: str) -> None:
    for seq in range(10_000):
        batch = new_batch(f"{tag}/{seq}")
        index = len(ledger.sent)
        ledger.sent.append((batch, False))
        try:
            async with session.post(URL, json=batch, headers=AUTH) as response:
                body = await response.json()
                assert response.status == 200, body
                assert body["update_urls"] == []
                ledger.sent[index] = (batch, True)
        except (TimeoutError, aiohttp.ClientError):
            return


async def pulled(session: aiohttp.ClientSession) -> list[dict[str, Any]]:
    """Every stored action, following the pages (gpodder.episode_page_size) as Kasts
    does: ask again from the returned timestamp until a page comes back empty."""
    actions: list[dict[str, Any]] = []
    since = 0
    while True:
        async with session.get(f"{URL}?since={since}", headers=AUTH) as response:
            assert response.status == 200
            raw = await response.read()
        body = json.loads(raw)
        assert raw == json.dumps(body, separators=(",", ":")).encode()  # compact ASCII JSON
        if not body["actions"]:
            return actions
        actions.extend(body["actions"])
        since = body["timestamp"]


async def check_survivors(session: aiohttp.ClientSession, ledger: Ledger) -> None:
    actions = await pulled(session)
    keys = [(a["episode"], a["position"]) for a in actions]
    assert len(keys) == len(set(keys)), "an action is stored twice"
    present = {a["episode"]: a for a in actions}
    for batch, acknowledged in ledger.sent:
        there = [item["episode"] in present for item in batch]
        if acknowledged:
            assert all(there), "an acknowledged action was lost"
            for item in batch:  # the pull shows what was sent
                assert present[item["episode"]] == item
        else:
            assert all(there) or not any(there), "a batch was stored in part"
    done = [batch for batch, ok in ledger.sent if ok]
    if done:  # a client that never saw the 200 sends the batch again
        async with session.post(URL, json=done[-1], headers=AUTH) as response:
            assert response.status == 200
        assert len(await pulled(session)) == len(actions)


async def test_acknowledged_episode_actions_survive_sigkill(tmp_path: Path) -> None:
    port = free_port()
    config = write_server_config(tmp_path, port)
    await with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD))
    server = ServerProcess(tmp_path / "server.toml", port, tmp_path / "server.log")
    ledger = Ledger()
    timeout = aiohttp.ClientTimeout(total=10)
    try:
        for round_no, kill_after in enumerate(KILL_AFTER):
            await asyncio.to_thread(server.start)
            async with aiohttp.ClientSession(server.base_url, timeout=timeout) as session:
                await check_survivors(session, ledger)
                before = ledger.acknowledged()
                clients = [
                    asyncio.create_task(post_until_refused(session, ledger, f"r{round_no}c{c}"))
                    for c in range(CLIENTS)
                ]
                async with asyncio.timeout(30):
                    while ledger.acknowledged() < before + FIRST_ACKS:  # noqa: ASYNC110
                        await asyncio.sleep(0.01)
                await asyncio.sleep(kill_after)
                server.kill()
                await asyncio.gather(*clients)
            assert len(ledger.sent) - ledger.acknowledged() >= CLIENTS
        await asyncio.to_thread(server.start)
        async with aiohttp.ClientSession(server.base_url, timeout=timeout) as session:
            await check_survivors(session, ledger)
    finally:
        server.stop()
    checked = db_check(tmp_path / "server.toml")
    assert checked.returncode == 0, checked.stderr
