"""Contract sections 4 and 5: the paged list and GET one subscription."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import login
from tests.support.sync_helpers import action, all_subscriptions, get_json, post_batch

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]


async def subscribe_many(client: Client, token: str, urls: list[str]) -> list[str]:
    """Subscribe in batches of 30; return the sync ids in order."""
    ids = []
    for start in range(0, len(urls), 30):
        body = await post_batch(
            client, token, [action(feed_url=u) for u in urls[start : start + 30]]
        )
        ids.extend(r["data"]["sync_id"] for r in body["results"])
    return ids


def feeds(n: int, prefix: str = "f") -> list[str]:
    return [f"https://{prefix}{i}.example/rss" for i in range(n)]


async def test_empty_list(client: Client, alice: str) -> None:
    page = await get_json(client, alice, "/api/v1/subscriptions")
    assert page == {"results": [], "has_next": False}


async def test_default_limit_and_creation_order(client: Client, alice: str) -> None:
    ids = await subscribe_many(client, alice, feeds(60))
    page = await get_json(client, alice, "/api/v1/subscriptions")
    assert [s["sync_id"] for s in page["results"]] == ids[:50]
    assert page["has_next"] is True
    assert "prev_cursor" not in page
    rest = await get_json(client, alice, page["next_cursor"])
    assert [s["sync_id"] for s in rest["results"]] == ids[50:]
    assert rest["has_next"] is False
    assert "next_cursor" not in rest
    back = await get_json(client, alice, rest["prev_cursor"])
    assert [s["sync_id"] for s in back["results"]] == ids[:50]
    assert back["has_next"] is True
    assert "prev_cursor" not in back


async def test_cursors_are_relative_urls_that_keep_the_other_parameters(
    client: Client, alice: str
) -> None:
    await subscribe_many(client, alice, feeds(5))
    page = await get_json(
        client, alice, "/api/v1/subscriptions?include_unsubscribed=TRUE&limit=2&extra=x"
    )
    url = urlsplit(page["next_cursor"])
    assert url.scheme == "" and url.netloc == ""
    assert url.path == "/api/v1/subscriptions"
    query = dict(parse_qsl(url.query))
    assert query["include_unsubscribed"] == "TRUE"
    assert query["limit"] == "2"
    assert query["extra"] == "x"
    assert query["since"]
    following = await get_json(client, alice, page["next_cursor"])
    assert dict(parse_qsl(urlsplit(following["prev_cursor"]).query))["limit"] == "2"


async def test_prev_and_next_walk_back_and_forth(client: Client, alice: str) -> None:
    ids = await subscribe_many(client, alice, feeds(7))
    pages = []
    url: str | None = "/api/v1/subscriptions?limit=3"
    while url:
        page = await get_json(client, alice, url)
        pages.append([s["sync_id"] for s in page["results"]])
        url = page.get("next_cursor")
    assert pages == [ids[0:3], ids[3:6], ids[6:7]]
    last = await get_json(client, alice, "/api/v1/subscriptions?limit=3")
    last = await get_json(client, alice, last["next_cursor"])
    last = await get_json(client, alice, last["next_cursor"])
    middle = await get_json(client, alice, last["prev_cursor"])
    assert [s["sync_id"] for s in middle["results"]] == ids[3:6]
    first = await get_json(client, alice, middle["prev_cursor"])
    assert [s["sync_id"] for s in first["results"]] == ids[0:3]
    assert "prev_cursor" not in first
    assert first["has_next"] is True


async def test_include_unsubscribed_filters(client: Client, alice: str) -> None:
    ids = await subscribe_many(client, alice, feeds(4))
    await post_batch(
        client,
        alice,
        [action("unsubscribe", occurred_at="2026-02-01T00:00:00Z", sync_id=ids[1])],
    )
    active = await get_json(client, alice, "/api/v1/subscriptions")
    assert [s["sync_id"] for s in active["results"]] == [ids[0], ids[2], ids[3]]
    for flag in ("true", "1", "True"):
        every = await get_json(client, alice, f"/api/v1/subscriptions?include_unsubscribed={flag}")
        assert [s["sync_id"] for s in every["results"]] == ids
        assert every["results"][1]["unsubscribed_at"] == "2026-02-01T00:00:00Z"
    for flag in ("false", "0", "FALSE"):
        none = await get_json(client, alice, f"/api/v1/subscriptions?include_unsubscribed={flag}")
        assert len(none["results"]) == 3
    # prev_cursor only when earlier *matching* entities exist.
    page = await get_json(client, alice, "/api/v1/subscriptions?limit=1")
    page = await get_json(client, alice, page["next_cursor"])
    assert [s["sync_id"] for s in page["results"]] == [ids[2]]
    back = await get_json(client, alice, page["prev_cursor"])
    assert [s["sync_id"] for s in back["results"]] == [ids[0]]


async def test_paging_while_subscriptions_are_added_sees_each_original_once(
    client: Client, alice: str
) -> None:
    originals = await subscribe_many(client, alice, feeds(120))
    seen: list[str] = []
    url: str | None = "/api/v1/subscriptions?limit=25"
    added = 0
    while url:
        page = await get_json(client, alice, url)
        seen.extend(s["sync_id"] for s in page["results"])
        url = page.get("next_cursor")
        # Others add subscriptions between every page.
        await subscribe_many(client, alice, feeds(7, prefix=f"new{added}-"))
        added += 1
    assert [s for s in seen if s in set(originals)] == originals
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize(
    "query",
    [
        "limit=0",
        "limit=501",
        "limit=abc",
        "limit=-1",
        "limit=1.5",
        "limit=",
        "include_unsubscribed=yes",
        "include_unsubscribed=",
        "since=garbage",
        "since=WyJuIiwxLDFd.forged",
    ],
)
async def test_bad_parameters_are_400(client: Client, alice: str, query: str) -> None:
    body = await get_json(client, alice, f"/api/v1/subscriptions?{query}", expect=400)
    assert body["error"] == "Bad request"
    assert query.split("=")[0] in body["description"]


async def test_limit_bounds_follow_config(client: Client, alice: str) -> None:
    await subscribe_many(client, alice, feeds(3))
    page = await get_json(client, alice, "/api/v1/subscriptions?limit=500")
    assert len(page["results"]) == 3
    page = await get_json(client, alice, "/api/v1/subscriptions?limit=1")
    assert len(page["results"]) == 1


async def test_a_cursor_of_another_user_or_of_the_feed_is_400(
    client: Client, alice: str, create_user: Any
) -> None:
    await subscribe_many(client, alice, feeds(3))
    page = await get_json(client, alice, "/api/v1/subscriptions?limit=1")
    await create_user("bob")
    bob = (await login(client, "bob"))["access_token"]
    await get_json(client, bob, page["next_cursor"], expect=400)
    feed = await get_json(client, alice, "/api/v1/sync")
    since = dict(parse_qsl(urlsplit(feed["next_since"]).query))["since"]
    await get_json(client, alice, f"/api/v1/subscriptions?since={since}", expect=400)
    # A truncated cursor is refused too.
    cursor = dict(parse_qsl(urlsplit(page["next_cursor"]).query))["since"]
    await get_json(client, alice, f"/api/v1/subscriptions?since={cursor[:-3]}", expect=400)


async def test_get_one_subscription(client: Client, alice: str) -> None:
    ids = await subscribe_many(client, alice, ["https://one.example/rss"])
    entity = await get_json(client, alice, f"/api/v1/subscriptions/{ids[0]}")
    assert entity["feed_url"] == "https://one.example/rss"
    upper = await get_json(client, alice, f"/api/v1/subscriptions/{ids[0].upper()}")
    assert upper == entity
    for bad in ("not-a-uuid", str(uuid.uuid4()), "%00", "1' OR '1'='1"):
        body = await get_json(client, alice, f"/api/v1/subscriptions/{bad}", expect=404)
        assert body["error"] == "Not found"


async def test_list_needs_a_token(client: Client) -> None:
    response = await client.get("/api/v1/subscriptions")
    assert response.status == 401
    response = await client.get(f"/api/v1/subscriptions/{uuid.uuid4()}")
    assert response.status == 401


async def test_all_subscriptions_helper_sees_everything(client: Client, alice: str) -> None:
    ids = await subscribe_many(client, alice, feeds(3))
    assert [s["sync_id"] for s in await all_subscriptions(client, alice)] == ids
