"""Prometheus metrics (`server.metrics = true`), with the prometheus-client library
(the `metrics` extra; only this module imports it, and only when metrics are on).

Each app has its own registry (no module globals), so tests and several apps in
one process never mix.

Cost on the hot path: requests are counted in plain dicts on the event loop (a
`Counter.inc` and a `Histogram.observe` take a lock each and walk the buckets:
about 4 us a request, measurably more than 1% of a list page); the library turns
the dicts into metric families only when Prometheus scrapes. The gauges and the
commit count are read at the scrape too.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter as Tally
from collections.abc import Iterable, Iterator
from typing import Any, cast

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from podsync.store import stats
from podsync.web.keys import DB
from podsync.web.metrics import LATENCY_BUCKETS, LOGIN_OUTCOMES, METRICS, is_login_route


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


async def metrics_page(request: web.Request) -> web.Response:
    # The app stores this module's Metrics there (web/app.py), nothing else.
    metrics = cast(Metrics, request.app[METRICS])
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
