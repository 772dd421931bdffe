"""POST /api/v1/sync (a batch of actions) and GET /api/v1/sync (the change feed)."""

from __future__ import annotations

from aiohttp import web

from podsync import timestamps
from podsync.errors import InvalidInput
from podsync.services.sync import BatchOutcome
from podsync.web import params
from podsync.web.http import client_id, conditional_json, json_bytes, read_json
from podsync.web.keys import LISTING, SYNC, USER
from podsync.web.metrics import METRICS
from podsync.web.opa.sync_wire import parse_envelope, render_results

INCLUDE_VALUES = ("all", "subscriptions")


async def post_batch(request: web.Request) -> web.Response:
    writer = client_id(request)
    actions = parse_envelope(await read_json(request))
    statuses: list[str] = []  # for the metrics, counted once the batch is saved

    def render(outcome: BatchOutcome) -> bytes:
        statuses[:] = [r.status for r in outcome.results]
        return render_results(actions, outcome)

    # The body is rendered inside the batch's transaction: if that failed, nothing
    # would be saved; once the COMMIT is through, nothing is left that can fail.
    body = await request.app[SYNC].apply_rendered(
        request[USER].id,
        writer,
        [a.command for a in actions],
        render,
        keys=[a.key for a in actions],
    )
    metrics = request.app.get(METRICS)
    if metrics is not None:
        metrics.count_actions(statuses)
    return json_bytes(body)


def _check_include(request: web.Request) -> None:
    raw = request.query.get("include")
    if raw is None:
        return
    unknown = [part for part in raw.split(",") if part.strip() not in INCLUDE_VALUES]
    if unknown or not raw:
        raise InvalidInput(
            f"include must be a comma-separated list of {', '.join(INCLUDE_VALUES)}, not {raw!r}"
        )


async def get_changes(request: web.Request) -> web.StreamResponse:
    writer = client_id(request)
    _check_include(request)
    include_own = params.boolean(request, "include_own")
    changes = await request.app[LISTING].changes(
        request[USER].id,
        params.since(request),
        params.limit(request),
        exclude_client=None if include_own else writer,
    )
    results = b",".join(
        b'{"type":"subscription","last_updated":"'
        + timestamps.format(last_updated).encode("ascii")
        + b'","data":'
        + view
        + b"}"
        for last_updated, view in changes.results
    )
    next_since = params.json_url(request, changes.next_since)
    has_next = "true" if changes.has_next else "false"
    tail = f'],"has_next":{has_next},"next_since":{next_since}}}'.encode("ascii")
    return conditional_json(request, b'{"results":[' + results + tail)
