"""POST /api/v1/sync (a batch of actions) and GET /api/v1/sync (the change feed)."""

from __future__ import annotations

from aiohttp import web

from podsync import timestamps
from podsync.errors import InvalidInput
from podsync.services.sync import BatchOutcome
from podsync.web import params
from podsync.web.http import client_id, conditional_json, json_bytes, read_json
from podsync.web.keys import LISTING, SYNC, USER
from podsync.web.opa.sync_wire import parse_envelope, render_results
from podsync.web.ops.metrics import METRICS

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


def _check_include(raw: str) -> None:
    unknown = [part for part in raw.split(",") if part.strip() not in INCLUDE_VALUES]
    if unknown or not raw:
        raise InvalidInput(
            f"include must be a comma-separated list of {', '.join(INCLUDE_VALUES)}, not {raw!r}"
        )


def _results(changes: list[tuple[int, bytes]]) -> bytes:
    return b",".join(
        [
            b'{"type":"subscription","last_updated":"'
            + timestamps.format(last_updated).encode("ascii")
            + b'","data":'
            + view
            + b"}"
            for last_updated, view in changes
        ]
    )


async def get_changes(request: web.Request) -> web.StreamResponse:
    writer = client_id(request)
    include = request.query.get("include")
    if include is not None:
        _check_include(include)
    include_own = params.boolean(request, "include_own")
    changes = await request.app[LISTING].changes(
        request[USER].id,
        params.since(request),
        params.limit(request),
        exclude_client=None if include_own else writer,
    )
    # A poll at the head (most polls) has no results: nothing to join.
    results = _results(changes.results) if changes.results else b""
    next_since = params.json_url(request, changes.next_since)
    has_next = "true" if changes.has_next else "false"
    tail = f'],"has_next":{has_next},"next_since":{next_since}}}'.encode("ascii")
    return conditional_json(request, b'{"results":[' + results + tail)
