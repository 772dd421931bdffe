"""GET /api/v1/subscriptions and GET /api/v1/subscriptions/{sync_id}.

Pages are joined from each entity's stored JSON (`model.subscription_view`): no
per-row objects and no encoder on the hot path."""

from __future__ import annotations

from aiohttp import web

from podsync.web import params
from podsync.web.http import conditional_json
from podsync.web.keys import LISTING, USER


async def list_subscriptions(request: web.Request) -> web.StreamResponse:
    include_unsubscribed = params.boolean(request, "include_unsubscribed")
    limit = params.limit(request)
    page = await request.app[LISTING].page(
        request[USER].id, params.since(request), limit, include_unsubscribed
    )
    if page.next_cursor is not None:
        tail = ',"has_next":true,"next_cursor":' + params.json_url(request, page.next_cursor)
    else:
        tail = ',"has_next":false'
    if page.prev_cursor is not None:
        tail += ',"prev_cursor":' + params.json_url(request, page.prev_cursor)
    # One copy of the page's ~10 KB, not one per piece added.
    body = b"".join((b'{"results":[', b",".join(page.views), b"]", tail.encode("ascii"), b"}"))
    return conditional_json(request, body)


async def get_subscription(request: web.Request) -> web.StreamResponse:
    entity = await request.app[LISTING].get(request[USER].id, request.match_info["sync_id"])
    return conditional_json(request, entity.view)
