"""POST /api/v1/sync (a batch of actions) and GET /api/v1/sync (the change feed)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from podsync import timestamps
from podsync.errors import InvalidInput
from podsync.services.sync import ActionResult, parse_envelope
from podsync.web import params, views
from podsync.web.http import client_id, json_ok, read_json
from podsync.web.keys import LISTING, METRICS, SYNC, USER

INCLUDE_VALUES = ("all", "subscriptions")


def _result(result: ActionResult) -> dict[str, Any]:
    action = result.action
    shown: dict[str, Any] = {
        "action_id": action.action_id,
        "type": action.type,
        "action": action.action,
        "status": result.status,
        "data": views.subscription(result.entity) if result.entity else action.data,
    }
    if result.reason is not None:
        shown["reason"] = result.reason
    return shown


async def post_batch(request: web.Request) -> web.Response:
    writer = client_id(request)
    actions = parse_envelope(await read_json(request))
    results = await request.app[SYNC].apply_batch(request[USER].id, actions, writer)
    metrics = request.app.get(METRICS)
    if metrics is not None:
        metrics.count_actions(r.status for r in results)
    return json_ok({"results": [_result(r) for r in results]})


def _check_include(request: web.Request) -> None:
    raw = request.query.get("include")
    if raw is None:
        return
    unknown = [part for part in raw.split(",") if part.strip() not in INCLUDE_VALUES]
    if unknown or not raw:
        raise InvalidInput(
            f"include must be a comma-separated list of {', '.join(INCLUDE_VALUES)}, not {raw!r}"
        )


async def get_changes(request: web.Request) -> web.Response:
    writer = client_id(request)
    _check_include(request)
    include_own = params.boolean(request, "include_own")
    changes = await request.app[LISTING].changes(
        request[USER].id,
        params.since(request),
        params.limit(request),
        exclude_client=None if include_own else writer,
    )
    return json_ok(
        {
            "results": [
                {
                    "type": "subscription",
                    "last_updated": timestamps.format(s.last_updated),
                    "data": views.subscription(s),
                }
                for s in changes.results
            ],
            "has_next": changes.has_next,
            "next_since": params.relative_url(request, changes.next_since),
        }
    )
