"""A dozen clients of one user post overlapping batches at once.

The same feeds arrive from every client, in different orders and as different
variants of one URL (scheme, host case, trailing slash): the server must answer
every request (no 5xx, no "database is locked"), create each feed exactly once,
and give every client the same sync_id for it. A second connection writing from
outside the server's writer (as the CLI does) runs at the same time.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import defaultdict
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.feeds import url_key
from tests.conftest import PASSWORD, bearer, with_accounts
from tests.support.sync_helpers import all_subscriptions

pytestmark = pytest.mark.both_engines

CLIENTS = 12
FEEDS = 60
BATCHES_PER_CLIENT = 6
BATCH = 30


def variant(n: int, rng: random.Random) -> str:
    scheme = rng.choice(["http", "https", "HTTPS"])
    host = rng.choice(["feeds.example.org", "Feeds.Example.ORG", "FEEDS.example.org"])
    slash = rng.choice(["", "/", "//"])
    return f"{scheme}://{host}/show-{n}{slash}"


async def client_posts(
    client: TestClient[Any, Any], token: str, client_no: int
) -> list[tuple[int, dict[str, Any]]]:
    """Post this client's batches: each a random sample of the shared feeds."""
    rng = random.Random(client_no)
    client_id = str(uuid.UUID(int=client_no + 1))
    answers = []
    for _ in range(BATCHES_PER_CLIENT):
        feeds = rng.sample(range(FEEDS), BATCH)
        actions = [
            {
                "action_id": str(uuid.uuid4()),
                "type": "subscription",
                "action": "subscribe",
                "occurred_at": f"2026-01-01T00:00:{rng.randrange(60):02d}Z",
                "data": {"feed_url": variant(n, rng)},
            }
            for n in feeds
        ]
        response = await client.post(
            "/api/v1/sync",
            json={"requests": actions},
            headers={**bearer(token), "Client-ID": client_id},
        )
        answers.append((response.status, await response.json()))
    return answers


async def test_a_dozen_clients_posting_the_same_feeds_create_each_once(
    client: TestClient[Any, Any], alice: str, config: Config
) -> None:
    async def outside_writer() -> None:
        # Another process's writes (the CLI) contend for the same SQLite file.
        for i in range(5):
            await with_accounts(config, lambda a, i=i: a.add_user(f"cli-user-{i}", PASSWORD))

    *per_client, _ = await asyncio.gather(
        *(client_posts(client, alice, c) for c in range(CLIENTS)), outside_writer()
    )
    answers = [answer for answers in per_client for answer in answers]
    assert len(answers) == CLIENTS * BATCHES_PER_CLIENT
    assert [status for status, _ in answers] == [200] * len(answers), [
        body for status, body in answers if status != 200
    ]

    sync_ids: dict[str, set[str]] = defaultdict(set)
    statuses: dict[str, int] = defaultdict(int)
    for _, body in answers:
        for result in body["results"]:
            statuses[result["status"]] += 1
            sync_ids[url_key(result["data"]["feed_url"])].add(result["data"]["sync_id"])
    # Each feed was created by exactly one subscribe; every other one was ignored.
    assert statuses == {"applied": FEEDS, "ignored": CLIENTS * BATCHES_PER_CLIENT * BATCH - FEEDS}
    assert len(sync_ids) == FEEDS
    assert all(len(ids) == 1 for ids in sync_ids.values()), "one feed got two sync_ids"

    subs = await all_subscriptions(client, alice)
    keys = [url_key(s["feed_url"]) for s in subs]
    assert len(keys) == len(set(keys)) == FEEDS
    assert {s["sync_id"] for s in subs} == {ids.pop() for ids in sync_ids.values()}
