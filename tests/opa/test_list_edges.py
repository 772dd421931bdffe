"""List pages whose cursor points past every remaining match: the page is empty,
and its prev/next cursors still say whether matches lie on the other side."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.support.sync_helpers import action, get_json, post_batch

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]
LIST = "/api/v1/subscriptions"


async def four_feeds(client: Client, token: str) -> list[str]:
    body = await post_batch(
        client, token, [action(feed_url=f"https://edge.example/{i}") for i in range(4)]
    )
    return [r["data"]["sync_id"] for r in body["results"]]


async def unsubscribe(client: Client, token: str, sync_ids: list[str]) -> None:
    actions = [
        action("unsubscribe", occurred_at="2026-02-01T00:00:00Z", sync_id=s) for s in sync_ids
    ]
    body = await post_batch(client, token, actions)
    assert {r["status"] for r in body["results"]} == {"applied"}


async def test_an_empty_page_forward_still_offers_the_way_back(client: Client, alice: str) -> None:
    ids = await four_feeds(client, alice)
    first = await get_json(client, alice, f"{LIST}?limit=2")
    await unsubscribe(client, alice, ids[2:])
    page = await get_json(client, alice, first["next_cursor"])
    assert (page["results"], page["has_next"]) == ([], False)
    assert "next_cursor" not in page
    back = await get_json(client, alice, page["prev_cursor"])
    assert [s["sync_id"] for s in back["results"]] == ids[:2]


async def test_an_empty_page_backward_still_offers_the_way_on(client: Client, alice: str) -> None:
    ids = await four_feeds(client, alice)
    first = await get_json(client, alice, f"{LIST}?limit=2")
    second = await get_json(client, alice, first["next_cursor"])
    await unsubscribe(client, alice, ids[:2])
    page = await get_json(client, alice, second["prev_cursor"])
    assert page["results"] == []
    assert "prev_cursor" not in page
    assert page["has_next"] is True
    on = await get_json(client, alice, page["next_cursor"])
    assert [s["sync_id"] for s in on["results"]] == ids[2:]
