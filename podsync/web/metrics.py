"""Prometheus metrics (`server.metrics = true`), with the prometheus-client library.

Labels are route *templates* (`/api/v1/subscriptions/{sync_id}`), methods,
statuses and outcomes: never a username, a URL or a token. Each app has its own
registry (no module globals), so tests and several apps in one process never mix.

Cost on the hot path: requests are counted in plain dicts on the event loop (a
`Counter.inc` and a `Histogram.observe` take a lock each and walk the buckets:
about 4 us a request, measurably more than 1% of a list page); the library turns
the dicts into metric families only when Prometheus scrapes. The gauges and the
commit count are read at the scrape too.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections import Counter as Tally
from collections.abc import Iterable, Iterator
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from podsync.errors import NotFound
from podsync.store import stats
from podsync.web.keys import DB
from podsync.web.middleware import Handler


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


class RequestStats(Collector):
    """Requests by (route, method, status) and latency histograms by (route, method),
    kept as plain numbers. Only the event loop's thread touches them (requests and
    scrapes alike), so they need no lock."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, int], int] = {}
        # Per (route, method): one count per bucket, then +Inf, then the sum.
        self.latency: dict[tuple[str, str], list[float]] = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        self.counts[key] = self.counts.get(key, 0) + 1
        histogram = self.latency.get((route, method))
        if histogram is None:
            histogram = self.latency[(route, method)] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        histogram[bisect_left(LATENCY_BUCKETS, seconds)] += 1  # the first bound >= it
        histogram[-1] += seconds

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "podsync_http_requests",
            "HTTP requests answered, by route template, method and status.",
            labels=("route", "method", "status"),
        )
        for (route, method, status), count in sorted(self.counts.items()):
            requests.add_metric((route, method, str(status)), count)
        yield requests
        latency = HistogramMetricFamily(
            "podsync_http_request_duration_seconds",
            "Time from the request reaching podsync to its response, by route template.",
            labels=("route", "method"),
        )
        bounds = [repr(float(b)) for b in LATENCY_BUCKETS] + ["+Inf"]  # "0.001", "1.0"
        for (route, method), histogram in sorted(self.latency.items()):
            cumulative = 0.0
            buckets: list[tuple[str, float]] = []
            for bound, in_bucket in zip(bounds, histogram[:-1], strict=True):
                cumulative += in_bucket
                buckets.append((bound, cumulative))
            latency.add_metric((route, method), buckets, sum_value=histogram[-1])
        yield latency


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = RequestStats()
        r.register(self.requests)
        self.sync_actions = Counter(
            "podsync_sync_actions",
            "Actions of POST /api/v1/sync batches, by result status.",
            ("status",),
            registry=r,
        )
        self.logins = Counter(
            "podsync_logins", "Login attempts, by outcome.", ("outcome",), registry=r
        )
        self.commits = Counter(
            "podsync_db_commits",
            "Database write transactions committed (group commit: one per group).",
            registry=r,
        )
        self.users = Gauge("podsync_users", "User accounts.", ("state",), registry=r)
        self.subscriptions = Gauge(
            "podsync_subscriptions", "Subscribed feeds, all users together.", registry=r
        )
        # labels() takes a lock and builds a key on every call: keep the children.
        self._action_children: dict[str, Any] = {}
        self._commits_seen = 0

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.observe(route, method, status, seconds)
        if method == "POST" and is_login_route(route):
            self.logins.labels(LOGIN_OUTCOMES.get(status, "error")).inc()

    def count_actions(self, statuses: Iterable[str]) -> None:
        for status, count in Tally(statuses).items():
            child = self._action_children.get(status)
            if child is None:
                child = self._action_children[status] = self.sync_actions.labels(status)
            child.inc(count)

    def set_commits(self, total: int) -> None:
        """The database counts its commits; the counter follows it at each scrape."""
        if total > self._commits_seen:
            self.commits.inc(total - self._commits_seen)
            self._commits_seen = total


# The app's metrics, present only with `server.metrics = true`.
METRICS: web.AppKey[Metrics] = web.AppKey("metrics")


def route_template(request: web.Request) -> str:
    resource = request.match_info.route.resource
    if resource is None or request.match_info.http_exception is not None:
        return UNMATCHED
    return resource.canonical


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Outside the error middleware, so it sees the status every error ended in."""
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


async def metrics_page(request: web.Request) -> web.Response:
    metrics = request.app.get(METRICS)
    if metrics is None:
        raise NotFound("metrics are off; set server.metrics = true to serve them here")
    db = request.app[DB]
    # Counting scans the subscriptions: off the event loop.
    async with db.read(threaded=True) as conn:
        counts = await stats.counts(conn)
    metrics.users.labels("enabled").set(counts.enabled_users)
    metrics.users.labels("disabled").set(counts.users - counts.enabled_users)
    metrics.subscriptions.set(counts.subscriptions)
    metrics.set_commits(db.commits)
    body = generate_latest(metrics.registry)
    # CONTENT_TYPE_LATEST carries its own charset parameter.
    response = web.Response(body=body)
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response
