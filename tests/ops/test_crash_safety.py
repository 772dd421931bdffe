"""Crash safety: clients post batches while the server process is SIGKILLed.

After each restart, every action that was acknowledged (200 received) is there,
every batch that was in flight is there whole or not at all, a replayed batch
answers as it did the first time, and `podsync db check` passes.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests.conftest import PASSWORD, with_accounts
from tests.support.server_process import ServerProcess, free_port, write_server_config

CLIENTS = 6
BATCH = 10
# When to kill the server in each round: seconds after the round's first few
# acknowledgements (so that the kill always lands while clients are writing, even on
# a slow machine).
KILL_AFTER = (0.05, 0.25, 0.5)
FIRST_ACKS = 3


@dataclass
class Batch:
    actions: list[dict[str, Any]]
    results: list[dict[str, Any]] | None = None  # set when the 200 arrived

    @property
    def feed_urls(self) -> list[str]:
        return [a["data"]["feed_url"] for a in self.actions]


@dataclass
class Ledger:
    """What the clients sent, and what the server acknowledged."""

    batches: list[Batch] = field(default_factory=list)

    @property
    def acknowledged(self) -> list[Batch]:
        return [b for b in self.batches if b.results is not None]


def new_batch(tag: str) -> Batch:
    return Batch(
        [
            {
                "action_id": str(uuid.uuid4()),
                "type": "subscription",
                "action": "subscribe",
                "occurred_at": "2026-01-01T00:00:00Z",
                "data": {"feed_url": f"https://crash.example/{tag}/{i}"},
            }
            for i in range(BATCH)
        ]
    )


async def login(session: aiohttp.ClientSession) -> dict[str, str]:
    async with session.post(
        "/auth/login", json={"username": "alice", "password": PASSWORD}
    ) as response:
        assert response.status == 200
        token = (await response.json())["access_token"]
    return {"Authorization": f"Bearer {token}"}


async def post_until_refused(
    session: aiohttp.ClientSession, auth: dict[str, str], ledger: Ledger, tag: str
) -> None:
    """Post fresh batches one after another until the server goes away."""
    for seq in range(10_000):
        batch = new_batch(f"{tag}/{seq}")
        ledger.batches.append(batch)
        try:
            async with session.post(
                "/api/v1/sync", json={"requests": batch.actions}, headers=auth
            ) as response:
                body = await response.json()
                assert response.status == 200, body
                batch.results = body["results"]
        except (TimeoutError, aiohttp.ClientError):
            return


async def until_acknowledged(ledger: Ledger, count: int) -> None:
    """Wait (20 s at most) until the clients have `count` acknowledged batches."""
    async with asyncio.timeout(20):
        while len(ledger.acknowledged) < count:  # noqa: ASYNC110 - polls a plain list
            await asyncio.sleep(0.01)


async def stored(session: aiohttp.ClientSession, auth: dict[str, str]) -> dict[str, str]:
    """feed_url -> sync_id of every subscription, paging through the list API."""
    found: dict[str, str] = {}
    url: str | None = "/api/v1/subscriptions?limit=500"
    while url is not None:
        async with session.get(url, headers=auth) as response:
            assert response.status == 200
            page = await response.json()
        for sub in page["results"]:
            assert sub["feed_url"] not in found, "a subscription is listed twice"
            found[sub["feed_url"]] = sub["sync_id"]
        url = page.get("next_cursor")
    return found


async def check_survivors(session: aiohttp.ClientSession, ledger: Ledger) -> None:
    auth = await login(session)
    present = await stored(session, auth)
    for batch in ledger.batches:
        there = [url in present for url in batch.feed_urls]
        if batch.results is not None:
            assert all(there), "an acknowledged action was lost"
            assert [present[url] for url in batch.feed_urls] == [
                r["data"]["sync_id"] for r in batch.results
            ]
        else:  # in flight when the server died: all of it or none of it
            assert all(there) or not any(there), "a batch was applied in part"
    acknowledged = ledger.acknowledged
    if acknowledged:
        # One by sync_id, and a replay of the last acknowledged batch, as a client
        # that never saw the 200 would retry it.
        last = acknowledged[-1]
        assert last.results is not None
        sync_id = last.results[0]["data"]["sync_id"]
        async with session.get(f"/api/v1/subscriptions/{sync_id}", headers=auth) as response:
            assert response.status == 200
            assert (await response.json())["feed_url"] == last.feed_urls[0]
        async with session.post(
            "/api/v1/sync", json={"requests": last.actions}, headers=auth
        ) as response:
            assert response.status == 200
            assert (await response.json())["results"] == last.results


def db_check(config_path: Path) -> subprocess.CompletedProcess[str]:
    """`podsync db check`, the admin's own integrity check, as a separate process."""
    argv = [sys.executable, "-m", "podsync", "--config", str(config_path), "db", "check"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


async def test_acknowledged_actions_survive_sigkill_of_the_server(tmp_path: Path) -> None:
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
                acknowledged_before = len(ledger.acknowledged)
                auth = await login(session)
                clients = [
                    asyncio.create_task(
                        post_until_refused(session, auth, ledger, f"r{round_no}c{c}")
                    )
                    for c in range(CLIENTS)
                ]
                await until_acknowledged(ledger, acknowledged_before + FIRST_ACKS)
                await asyncio.sleep(kill_after)
                server.kill()
                await asyncio.gather(*clients)
            # Every client's last batch was cut off by the kill, unacknowledged.
            assert len(ledger.batches) - len(ledger.acknowledged) >= CLIENTS
        await asyncio.to_thread(server.start)
        async with aiohttp.ClientSession(server.base_url, timeout=timeout) as session:
            await check_survivors(session, ledger)
    finally:
        server.stop()
    checked = db_check(tmp_path / "server.toml")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith(f"database {config.database.path} is ok")
