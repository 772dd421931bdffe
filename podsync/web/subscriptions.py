"""GET /api/v1/subscriptions and GET /api/v1/subscriptions/{sync_id}."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from podsync.web import params, views
from podsync.web.http import json_ok
from podsync.web.keys import LISTING, USER


async def list_subscriptions(request: web.Request) -> web.Response:
    include_unsubscribed = params.boolean(request, "include_unsubscribed")
    limit = params.limit(request)
    page = await request.app[LISTING].page(
        request[USER].id, params.since(request), limit, include_unsubscribed
    )
    body: dict[str, Any] = {
        "results": [views.subscription(s) for s in page.results],
        "has_next": page.next_cursor is not None,
    }
    if page.next_cursor is not None:
        body["next_cursor"] = params.relative_url(request, page.next_cursor)
    if page.prev_cursor is not None:
        body["prev_cursor"] = params.relative_url(request, page.prev_cursor)
    return json_ok(body)


async def get_subscription(request: web.Request) -> web.Response:
    entity = await request.app[LISTING].get(request[USER].id, request.match_info["sync_id"])
    return json_ok(views.subscription(entity))
