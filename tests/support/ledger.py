"""The crash-safety ledger: clients that write batches while the server is killed,
a record of what each sent and what the server acknowledged (a 200 received), and
the check after a restart that every acknowledged action is there, every batch in
flight is there whole or not at all, and a replay changes nothing.

One writer per API: `OpaWriter` posts subscription actions to POST /api/v1/sync,
`GpodderWriter` posts play actions to the gpodder episode upload (as AntennaPod
does). `hammer` runs a round: N clients per writer, the kill once each writer has a
few fresh acknowledgements (so it always lands while clients write, even on a slow
machine), and the clients' end."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests.conftest import PASSWORD

# How many acknowledgements each writer gets in a round before the kill is timed.
FIRST_ACKS = 3


@dataclass
class Batch:
    actions: list[dict[str, Any]]
    results: Any = None  # what the 200 answered; None while unacknowledged

    @property
    def acknowledged(self) -> bool:
        return self.results is not None


@dataclass
class Ledger:
    """What the clients sent, and what the server acknowledged."""

    batches: list[Batch] = field(default_factory=list)

    @property
    def acknowledged(self) -> list[Batch]:
        return [b for b in self.batches if b.acknowledged]

    @property
    def in_flight(self) -> int:
        """Batches sent whose 200 never came (cut off by a kill)."""
        return len(self.batches) - len(self.acknowledged)


class LedgerWriter:
    """Clients of one API writing into one ledger."""

    name = ""  # a letter in the batches' tags, so writers never share a feed

    def __init__(self) -> None:
        self.ledger = Ledger()

    async def prepare(self, session: aiohttp.ClientSession) -> None:
        """Before a round's clients start (a login, where the API needs one)."""

    def new_batch(self, tag: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    async def post(self, session: aiohttp.ClientSession, actions: list[dict[str, Any]]) -> Any:
        """Send one batch; return what the 200 answered (it must be a 200)."""
        raise NotImplementedError

    async def check_survivors(self, session: aiohttp.ClientSession) -> None:
        raise NotImplementedError

    async def post_until_refused(self, session: aiohttp.ClientSession, tag: str) -> None:
        """Post fresh batches one after another until the server goes away."""
        for seq in range(10_000):
            batch = Batch(self.new_batch(f"{tag}/{seq}"))
            self.ledger.batches.append(batch)
            try:
                batch.results = await self.post(session, batch.actions)
            except (TimeoutError, aiohttp.ClientError):
                return

    async def keep_posting(
        self, session: aiohttp.ClientSession, tag: str, stop: asyncio.Event
    ) -> None:
        """Post fresh batches until told to stop; a batch cut off (its worker killed) is
        left unacknowledged, and the client goes on with the next."""
        seq = 0
        while not stop.is_set():
            batch = Batch(self.new_batch(f"{tag}/{seq}"))
            seq += 1
            self.ledger.batches.append(batch)
            try:
                batch.results = await self.post(session, batch.actions)
            except (TimeoutError, aiohttp.ClientError):
                continue


class OpaWriter(LedgerWriter):
    """Subscription batches through POST /api/v1/sync with a bearer token."""

    name = "o"
    size = 10

    def __init__(self) -> None:
        super().__init__()
        self.auth: dict[str, str] = {}

    async def prepare(self, session: aiohttp.ClientSession) -> None:
        self.auth = await opa_login(session)

    def new_batch(self, tag: str) -> list[dict[str, Any]]:
        return [
            {
                "action_id": str(uuid.uuid4()),
                "type": "subscription",
                "action": "subscribe",
                "occurred_at": "2026-01-01T00:00:00Z",
                "data": {"feed_url": f"https://crash.example/{tag}/{i}"},
            }
            for i in range(self.size)
        ]

    async def post(self, session: aiohttp.ClientSession, actions: list[dict[str, Any]]) -> Any:
        async with session.post(
            "/api/v1/sync", json={"requests": actions}, headers=self.auth
        ) as response:
            body = await response.json()
            assert response.status == 200, body
            return body["results"]

    async def check_survivors(self, session: aiohttp.ClientSession) -> None:
        auth = await opa_login(session)
        present = await stored_subscriptions(session, auth)
        for batch in self.ledger.batches:
            urls = [a["data"]["feed_url"] for a in batch.actions]
            there = [url in present for url in urls]
            if batch.acknowledged:
                assert all(there), "an acknowledged action was lost"
                assert [present[url] for url in urls] == [
                    r["data"]["sync_id"] for r in batch.results
                ]
            else:  # in flight when the server died: all of it or none of it
                assert all(there) or not any(there), "a batch was applied in part"
        acknowledged = self.ledger.acknowledged
        if acknowledged:
            # One by sync_id, and a replay of the last acknowledged batch, as a client
            # that never saw the 200 would retry it.
            last = acknowledged[-1]
            sync_id = last.results[0]["data"]["sync_id"]
            async with session.get(f"/api/v1/subscriptions/{sync_id}", headers=auth) as response:
                assert response.status == 200
                assert (await response.json())["feed_url"] == last.actions[0]["data"]["feed_url"]
            async with session.post(
                "/api/v1/sync", json={"requests": last.actions}, headers=auth
            ) as response:
                assert response.status == 200
                assert (await response.json())["results"] == last.results


async def opa_login(session: aiohttp.ClientSession) -> dict[str, str]:
    async with session.post(
        "/auth/login", json={"username": "alice", "password": PASSWORD}
    ) as response:
        assert response.status == 200
        token = (await response.json())["access_token"]
    return {"Authorization": f"Bearer {token}"}


async def stored_subscriptions(
    session: aiohttp.ClientSession, auth: dict[str, str]
) -> dict[str, str]:
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


GPODDER_EPISODES = "/api/2/episodes/alice.json"
GPODDER_AUTH = {"Authorization": "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()}


class GpodderWriter(LedgerWriter):
    """Play actions through the gpodder episode upload with HTTP Basic."""

    name = "g"
    size = 30

    def new_batch(self, tag: str) -> list[dict[str, Any]]:
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
            for i in range(self.size)
        ]

    async def post(self, session: aiohttp.ClientSession, actions: list[dict[str, Any]]) -> Any:
        async with session.post(GPODDER_EPISODES, json=actions, headers=GPODDER_AUTH) as response:
            body = await response.json()
            assert response.status == 200, body
            assert body["update_urls"] == []
            return body

    async def check_survivors(self, session: aiohttp.ClientSession) -> None:
        actions = await pulled_episode_actions(session)
        keys = [(a["episode"], a["position"]) for a in actions]
        assert len(keys) == len(set(keys)), "an action is stored twice"
        present = {a["episode"]: a for a in actions}
        for batch in self.ledger.batches:
            there = [item["episode"] in present for item in batch.actions]
            if batch.acknowledged:
                assert all(there), "an acknowledged action was lost"
                for item in batch.actions:  # the pull shows what was sent
                    assert present[item["episode"]] == item
            else:
                assert all(there) or not any(there), "a batch was stored in part"
        done = self.ledger.acknowledged
        if done:  # a client that never saw the 200 sends the batch again
            async with session.post(
                GPODDER_EPISODES, json=done[-1].actions, headers=GPODDER_AUTH
            ) as response:
                assert response.status == 200
            assert len(await pulled_episode_actions(session)) == len(actions)


async def pulled_episode_actions(session: aiohttp.ClientSession) -> list[dict[str, Any]]:
    """Every stored action, following the pages (gpodder.episode_page_size) as Kasts
    does: ask again from the returned timestamp until a page comes back empty."""
    actions: list[dict[str, Any]] = []
    since = 0
    while True:
        async with session.get(
            f"{GPODDER_EPISODES}?since={since}", headers=GPODDER_AUTH
        ) as response:
            assert response.status == 200
            raw = await response.read()
        body = json.loads(raw)
        assert raw == json.dumps(body, separators=(",", ":")).encode()  # compact ASCII JSON
        if not body["actions"]:
            return actions
        actions.extend(body["actions"])
        since = body["timestamp"]


async def hammer(
    session: aiohttp.ClientSession,
    writers: Sequence[tuple[LedgerWriter, int]],
    tag: str,
    kill_after: float,
    kill: Callable[[], None],
) -> None:
    """One round: `clients` clients per writer post until refused; once every writer
    has FIRST_ACKS fresh acknowledgements, wait `kill_after` seconds and `kill()`."""
    before = [len(writer.ledger.acknowledged) for writer, _ in writers]
    for writer, _ in writers:
        await writer.prepare(session)
    clients = [
        asyncio.create_task(writer.post_until_refused(session, f"{tag}{writer.name}{c}"))
        for writer, count in writers
        for c in range(count)
    ]
    async with asyncio.timeout(30):
        while any(  # noqa: ASYNC110 - polls what the clients record
            len(writer.ledger.acknowledged) < acked + FIRST_ACKS
            for (writer, _), acked in zip(writers, before, strict=True)
        ):
            await asyncio.sleep(0.01)
    await asyncio.sleep(kill_after)
    kill()
    await asyncio.gather(*clients)


def db_check(config_path: Path) -> subprocess.CompletedProcess[str]:
    """`podsync db check`, the admin's own integrity check, as a separate process."""
    argv = [sys.executable, "-m", "podsync", "--config", str(config_path), "db", "check"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
