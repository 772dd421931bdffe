"""Builders for sync actions and calls, shared by the sync API tests."""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp.test_utils import TestClient

from podsync import rules
from podsync.services.sync import ActionKey
from tests.conftest import bearer


def new_subscribes(n: int, size: int = 30) -> tuple[list[rules.Command], list[ActionKey | None]]:
    """Batch `n` of `size` subscribes to feeds never seen before, with action ids of
    their own (batch and position in it), for `SyncService.apply`."""
    commands: list[rules.Command] = [
        rules.Subscribe(f"https://feeds.example/{n}/{i}.xml") for i in range(size)
    ]
    keys: list[ActionKey | None] = [
        ActionKey(f"00000000-0000-4000-8000-{n:06d}{i:06d}", "f") for i in range(size)
    ]
    return commands, keys


def action(
    kind: str = "subscribe",
    occurred_at: str = "2026-01-01T00:00:00Z",
    action_id: str | None = None,
    type_: str = "subscription",
    **data: Any,
) -> dict[str, Any]:
    return {
        "action_id": action_id or str(uuid.uuid4()),
        "type": type_,
        "action": kind,
        "occurred_at": occurred_at,
        "data": data,
    }


async def post_batch(
    client: TestClient[Any, Any],
    token: str,
    actions: list[dict[str, Any]],
    client_id: str | None = None,
    expect: int = 200,
) -> Any:
    headers = bearer(token)
    if client_id is not None:
        headers["Client-ID"] = client_id
    response = await client.post("/api/v1/sync", json={"requests": actions}, headers=headers)
    body = await response.json()
    assert response.status == expect, body
    return body


async def get_json(
    client: TestClient[Any, Any], token: str, url: str, expect: int = 200, **headers: str
) -> Any:
    response = await client.get(url, headers={**bearer(token), **headers})
    body = await response.json()
    assert response.status == expect, body
    return body


async def all_subscriptions(
    client: TestClient[Any, Any], token: str, include_unsubscribed: bool = True
) -> list[dict[str, Any]]:
    """Every subscription of the user, following next_cursor to the end."""
    flag = "true" if include_unsubscribed else "false"
    url: str | None = f"/api/v1/subscriptions?limit=500&include_unsubscribed={flag}"
    found: list[dict[str, Any]] = []
    while url:
        page = await get_json(client, token, url)
        found.extend(page["results"])
        url = page.get("next_cursor")
    return found
