"""Contract section 7: GET /api/v1/sync, the change feed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import login
from tests.support.sync_helpers import action, get_json, post_batch

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]
PHONE = str(uuid.uuid4())
LAPTOP = str(uuid.uuid4())


def urls(feed: dict[str, Any]) -> list[str]:
    return [r["data"]["feed_url"] for r in feed["results"]]


async def test_feed_lists_changes_in_change_order_with_next_since(
    client: Client, alice: str
) -> None:
    await post_batch(client, alice, [action(feed_url="https://a.example/rss")])
    await post_batch(client, alice, [action(feed_url="https://b.example/rss")])
    feed = await get_json(client, alice, "/api/v1/sync")
    assert urls(feed) == ["https://a.example/rss", "https://b.example/rss"]
    assert feed["has_next"] is False
    assert feed["results"][0]["type"] == "subscription"
    assert feed["results"][0]["last_updated"] == "2026-01-01T00:00:00Z"
    quiet = await get_json(client, alice, feed["next_since"])
    assert quiet["results"] == []
    assert quiet["next_since"]  # always present, even with nothing new
    await post_batch(client, alice, [action(feed_url="https://c.example/rss")])
    later = await get_json(client, alice, quiet["next_since"])
    assert urls(later) == ["https://c.example/rss"]


async def test_each_entity_appears_once_in_its_current_state(client: Client, alice: str) -> None:
    body = await post_batch(client, alice, [action(feed_url="https://a.example/rss")])
    sync_id = body["results"][0]["data"]["sync_id"]
    await post_batch(client, alice, [action(feed_url="https://b.example/rss")])
    await post_batch(
        client, alice, [action("unsubscribe", occurred_at="2026-02-01T00:00:00Z", sync_id=sync_id)]
    )
    feed = await get_json(client, alice, "/api/v1/sync")
    assert urls(feed) == ["https://b.example/rss", "https://a.example/rss"]
    assert feed["results"][1]["data"]["unsubscribed_at"] == "2026-02-01T00:00:00Z"
    assert feed["results"][1]["last_updated"] == "2026-02-01T00:00:00Z"


async def test_paging_the_feed_with_limit(client: Client, alice: str) -> None:
    await post_batch(client, alice, [action(feed_url=f"https://{i}.example/rss") for i in range(5)])
    seen: list[str] = []
    url = "/api/v1/sync?limit=2"
    while True:
        feed = await get_json(client, alice, url)
        seen.extend(urls(feed))
        assert dict(parse_qsl(urlsplit(feed["next_since"]).query))["limit"] == "2"
        url = feed["next_since"]
        if not feed["has_next"]:
            break
    assert seen == [f"https://{i}.example/rss" for i in range(5)]


async def test_own_changes_are_left_out_unless_include_own(client: Client, alice: str) -> None:
    await post_batch(client, alice, [action(feed_url="https://phone.example/rss")], PHONE)
    await post_batch(client, alice, [action(feed_url="https://laptop.example/rss")], LAPTOP)
    await post_batch(client, alice, [action(feed_url="https://anon.example/rss")])
    phone = await get_json(client, alice, "/api/v1/sync", **{"Client-ID": PHONE})
    assert urls(phone) == ["https://laptop.example/rss", "https://anon.example/rss"]
    own = await get_json(client, alice, "/api/v1/sync?include_own=true", **{"Client-ID": PHONE})
    assert len(own["results"]) == 3
    anonymous = await get_json(client, alice, "/api/v1/sync")
    assert len(anonymous["results"]) == 3


async def test_a_late_offline_action_reaches_other_clients(client: Client, alice: str) -> None:
    body = await post_batch(
        client,
        alice,
        [action(occurred_at="2026-01-01T00:00:00Z", feed_url="https://x.example/")],
        PHONE,
    )
    sync_id = body["results"][0]["data"]["sync_id"]
    laptop_view = await get_json(client, alice, "/api/v1/sync", **{"Client-ID": LAPTOP})
    assert len(laptop_view["results"]) == 1
    # The phone was offline for days; its unsubscribe carries an old time but is new.
    await post_batch(
        client,
        alice,
        [action("unsubscribe", occurred_at="2026-01-02T00:00:00Z", sync_id=sync_id)],
        PHONE,
    )
    later = await get_json(client, alice, laptop_view["next_since"], **{"Client-ID": LAPTOP})
    assert [r["data"]["sync_id"] for r in later["results"]] == [sync_id]
    assert later["results"][0]["data"]["unsubscribed_at"] == "2026-01-02T00:00:00Z"


async def test_since_as_a_timestamp_means_recorded_at_or_after(client: Client, alice: str) -> None:
    await post_batch(client, alice, [action(feed_url="https://old.example/rss")])
    feed = await get_json(client, alice, "/api/v1/sync")
    everything = await get_json(client, alice, "/api/v1/sync?since=2000-01-01T00:00:00Z")
    assert urls(everything) == urls(feed)
    future = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    nothing = await get_json(client, alice, f"/api/v1/sync?since={future}")
    assert nothing["results"] == []
    await post_batch(client, alice, [action(feed_url="https://new.example/rss")])
    # Its next_since still finds what changes later.
    later = await get_json(client, alice, nothing["next_since"])
    assert urls(later) == ["https://new.example/rss"]


async def test_feed_is_per_user(client: Client, alice: str, create_user: Any) -> None:
    await post_batch(client, alice, [action(feed_url="https://alice.example/rss")])
    await create_user("bob")
    bob = (await login(client, "bob"))["access_token"]
    feed = await get_json(client, bob, "/api/v1/sync")
    assert feed["results"] == []
    alices = await get_json(client, alice, "/api/v1/sync")
    await get_json(client, bob, alices["next_since"], expect=400)


@pytest.mark.parametrize(
    "query",
    [
        "include=episodes",
        "include=",
        "include=all,bogus",
        "include_own=maybe",
        "limit=0",
        "limit=x",
        "since=yesterday",
        "since=2026-01-01T00:00:00",
    ],
)
async def test_bad_feed_parameters_are_400(client: Client, alice: str, query: str) -> None:
    body = await get_json(client, alice, f"/api/v1/sync?{query}", expect=400)
    assert body["error"] == "Bad request"


async def test_include_values_are_accepted(client: Client, alice: str) -> None:
    await post_batch(client, alice, [action(feed_url="https://a.example/rss")])
    for value in ("all", "subscriptions", "all,subscriptions"):
        feed = await get_json(client, alice, f"/api/v1/sync?include={value}")
        assert len(feed["results"]) == 1
        assert f"include={value.replace(',', '%2C')}" in feed["next_since"]


async def test_bad_client_id_on_the_feed_is_400(client: Client, alice: str) -> None:
    await get_json(client, alice, "/api/v1/sync", expect=400, **{"Client-ID": "phone"})
