"""Metrics on the request path (`server.metrics = true`): the middleware that times
and counts every request, and the labels it uses.

Labels are route *templates* (`/api/v1/subscriptions/{sync_id}`), methods,
statuses and outcomes: never a username, a URL or a token. What they are counted
into, and the page Prometheus scrapes, live in `web/ops/prometheus.py`, which alone
imports the prometheus-client library (the `metrics` extra): with metrics off it
is never loaded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Protocol

from aiohttp import web

from podsync.errors import NotFound
from podsync.web.middleware import Handler


class RequestMetrics(Protocol):
    """What the request path counts into: `web/ops/prometheus.py`'s `Metrics`, the one
    kind there is. Named here so that this module never imports that one (which
    imports this one for its labels)."""

    def observe(self, route: str, method: str, status: int, seconds: float) -> None: ...

    def count_actions(self, statuses: Iterable[str]) -> None: ...


# Login routes (ours and the gpodder layer's `/api/2/auth/{u}/login.json`): their
# statuses become the outcome of a login.
def is_login_route(route: str) -> bool:
    return route == "/auth/login" or (
        route.startswith("/api/2/auth/") and route.endswith("/login.json")
    )


LOGIN_OUTCOMES = {200: "success", 400: "invalid", 401: "failure", 429: "throttled", 503: "busy"}
UNMATCHED = "unmatched"  # 404s and 405s of paths no route knows: one label, not the path
# Seconds; a list page or a sync batch takes ~1 ms, a login ~0.1 s (argon2).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

# The app's metrics, present only with `server.metrics = true`.
METRICS: web.AppKey[RequestMetrics] = web.AppKey("metrics")


def route_template(request: web.Request) -> str:
    resource = request.match_info.route.resource
    if resource is None or request.match_info.http_exception is not None:
        return UNMATCHED
    return resource.canonical


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Outside podsync's own middleware, so it sees the status every error ended in."""
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    except asyncio.CancelledError:  # the client went away: no status to count
        status = 0
        raise
    finally:
        if status:
            request.app[METRICS].observe(
                route_template(request), request.method, status, time.perf_counter() - started
            )


async def metrics_off(request: web.Request) -> web.Response:
    """GET /metrics while `server.metrics` is off."""
    raise NotFound("metrics are off; set server.metrics = true to serve them here")
