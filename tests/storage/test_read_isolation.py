"""A read never sees half a batch.

Writers share group transactions (a SAVEPOINT each) and reads run on the event loop
while a group's COMMIT is on the commit thread; none of that may let a reader see
some actions of a batch and not the others. Each batch below subscribes 30 feeds
that share a marker; every listing and every change-feed read taken meanwhile must
hold 0 or 30 feeds of each marker, and the last one all of them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from aiohttp.test_utils import TestClient

from tests.conftest import bearer
from tests.support.sync_helpers import action, post_batch

Client = TestClient[Any, Any]
BATCHES = 12  # 360 entities: one page of 500 is one snapshot
BATCH = 30


def _markers(results: list[dict[str, Any]]) -> Counter[str]:
    return Counter(urlsplit(entity["feed_url"]).hostname or "" for entity in results)


async def _list(client: Client, token: str) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/subscriptions?limit=500", headers=bearer(token))
    assert response.status == 200
    body = await response.json()
    assert not body["has_next"]
    results: list[dict[str, Any]] = body["results"]
    return results


async def _feed(client: Client, token: str) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/sync?limit=500&include_own=true", headers=bearer(token))
    assert response.status == 200
    return [change["data"] for change in (await response.json())["results"]]


async def test_no_read_sees_part_of_a_batch(client: Client, alice: str) -> None:
    seen: list[Counter[str]] = []
    statuses: list[str] = []
    done = asyncio.Event()

    async def write(k: int) -> None:
        await asyncio.sleep(0.01 * k)  # commits spread over time, some grouped
        batch = [
            action(
                feed_url=f"https://batch{k}.example/feed/{i}",
                occurred_at=f"2026-01-01T00:00:{i:02d}Z",
            )
            for i in range(BATCH)
        ]
        body = await post_batch(client, alice, batch)
        statuses.extend(r["status"] for r in body["results"])

    async def read() -> None:
        while not done.is_set():
            seen.append(_markers(await _list(client, alice)))
            seen.append(_markers(await _feed(client, alice)))

    readers = [asyncio.create_task(read()) for _ in range(3)]
    await asyncio.gather(*(write(k) for k in range(BATCHES)))
    done.set()
    await asyncio.gather(*readers)
    seen.append(_markers(await _list(client, alice)))
    partial = [counts for counts in seen if any(n != BATCH for n in counts.values())]
    assert partial == [], partial[:3]
    assert statuses == ["applied"] * BATCHES * BATCH
    assert len(seen[-1]) == BATCHES
    # The readers ran while the writes were under way, not only before or after.
    assert any(0 < len(counts) < BATCHES for counts in seen)
