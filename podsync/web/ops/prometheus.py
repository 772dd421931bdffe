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

import contextlib
import json
import os
from bisect import bisect_left
from collections import Counter as Tally
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

from aiohttp import web
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from podsync.store import stats
from podsync.web.keys import DB
from podsync.web.ops.metrics import LATENCY_BUCKETS, LOGIN_OUTCOMES, METRICS, is_login_route

_SEP = "\t"  # joins a key's labels in a worker's published numbers (labels hold no tab)


class Tallies:
    """The counters as plain numbers: requests by (route, method, status), latency
    histograms by (route, method), sync actions by status, logins by outcome and
    commits. Only the event loop's thread touches them (requests and scrapes alike),
    so they need no lock."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str, int], int] = {}
        # Per (route, method): one count per bucket, then +Inf, then the sum.
        self.latency: dict[tuple[str, str], list[float]] = {}
        self.actions: dict[str, int] = {}
        self.logins: dict[str, int] = {}
        self.commits = 0

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        self.counts[key] = self.counts.get(key, 0) + 1
        histogram = self.latency.get((route, method))
        if histogram is None:
            histogram = self.latency[(route, method)] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        histogram[bisect_left(LATENCY_BUCKETS, seconds)] += 1  # the first bound >= it
        histogram[-1] += seconds

    def add(self, other: Tallies) -> None:
        for key, count in other.counts.items():
            self.counts[key] = self.counts.get(key, 0) + count
        for where, histogram in other.latency.items():
            mine = self.latency.setdefault(where, [0.0] * len(histogram))
            for i, value in enumerate(histogram):
                mine[i] += value
        for name, number in (("actions", other.actions), ("logins", other.logins)):
            ours = getattr(self, name)
            for label, count in number.items():
                ours[label] = ours.get(label, 0) + count
        self.commits += other.commits

    def to_json(self) -> str:
        return json.dumps(
            {
                "counts": {_SEP.join(map(str, k)): v for k, v in self.counts.items()},
                "latency": {_SEP.join(k): v for k, v in self.latency.items()},
                "actions": self.actions,
                "logins": self.logins,
                "commits": self.commits,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Tallies:
        raw = json.loads(text)
        tallies = cls()
        for key, count in raw["counts"].items():
            route, method, status = key.split(_SEP)
            tallies.counts[(route, method, int(status))] = count
        for key, histogram in raw["latency"].items():
            route, method = key.split(_SEP)
            tallies.latency[(route, method)] = histogram
        tallies.actions, tallies.logins = raw["actions"], raw["logins"]
        tallies.commits = raw["commits"]
        return tallies


class Families(Collector):
    """The counters' metric families, made at each scrape from `tallies()`."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        t = self.metrics.tallies()
        requests = CounterMetricFamily(
            "podsync_http_requests",
            "HTTP requests answered, by route template, method and status.",
            labels=("route", "method", "status"),
        )
        for (route, method, status), count in sorted(t.counts.items()):
            requests.add_metric((route, method, str(status)), count)
        yield requests
        latency = HistogramMetricFamily(
            "podsync_http_request_duration_seconds",
            "Time from the request reaching podsync to its response, by route template.",
            labels=("route", "method"),
        )
        bounds = [repr(float(b)) for b in LATENCY_BUCKETS] + ["+Inf"]  # "0.001", "1.0"
        for (route, method), histogram in sorted(t.latency.items()):
            cumulative = 0.0
            buckets: list[tuple[str, float]] = []
            for bound, in_bucket in zip(bounds, histogram[:-1], strict=True):
                cumulative += in_bucket
                buckets.append((bound, cumulative))
            latency.add_metric((route, method), buckets, sum_value=histogram[-1])
        yield latency
        actions = CounterMetricFamily(
            "podsync_sync_actions",
            "Actions of POST /api/v1/sync batches, by result status.",
            labels=("status",),
        )
        for result, count in sorted(t.actions.items()):
            actions.add_metric((result,), count)
        yield actions
        logins = CounterMetricFamily(
            "podsync_logins", "Login attempts, by outcome.", labels=("outcome",)
        )
        for outcome, count in sorted(t.logins.items()):
            logins.add_metric((outcome,), count)
        yield logins
        yield CounterMetricFamily(
            "podsync_db_commits",
            "Database write transactions committed (group commit: one per group).",
            value=t.commits,
        )


class Metrics:
    """One app's metrics. With several workers (`server.workers`), each worker
    publishes its numbers to the workers' shared directory (about every second and
    before it answers a scrape), a scrape answered by any worker adds up all of
    them, and a worker that replaces a dead one goes on from the numbers it left, so
    no counter ever goes down."""

    def __init__(self, shared_dir: str = "", index: int = 0) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.own = Tallies()
        self._commits_base = 0  # the commits of the worker this one replaced
        self.shared = Path(shared_dir) if shared_dir else None
        self._mine = self.shared / f"metrics-{index}.json" if self.shared else None
        if self._mine is not None:
            with contextlib.suppress(OSError, ValueError, KeyError):
                self.own = Tallies.from_json(self._mine.read_text())
                self._commits_base = self.own.commits
        r.register(Families(self))
        self.users = Gauge("podsync_users", "User accounts.", ("state",), registry=r)
        self.subscriptions = Gauge(
            "podsync_subscriptions", "Subscribed feeds, all users together.", registry=r
        )

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        self.own.observe(route, method, status, seconds)
        if method == "POST" and is_login_route(route):
            outcome = LOGIN_OUTCOMES.get(status, "error")
            self.own.logins[outcome] = self.own.logins.get(outcome, 0) + 1

    def count_actions(self, statuses: Iterable[str]) -> None:
        actions = self.own.actions
        for status, count in Tally(statuses).items():
            actions[status] = actions.get(status, 0) + count

    def set_commits(self, total: int) -> None:
        """The database counts this worker's commits; the counter follows it."""
        self.own.commits = self._commits_base + total

    def publish(self) -> None:
        """Write this worker's numbers where the others read them (whole or not at all)."""
        if self._mine is None:
            return
        part = self._mine.with_suffix(f".{os.getpid()}.part")
        part.write_text(self.own.to_json())
        os.replace(part, self._mine)

    def tallies(self) -> Tallies:
        """This worker's numbers, and with several workers the others' added."""
        if self.shared is None:
            return self.own
        total = Tallies()
        total.add(self.own)
        for path in self.shared.glob("metrics-*.json"):
            if path != self._mine:
                with contextlib.suppress(OSError, ValueError, KeyError):
                    total.add(Tallies.from_json(path.read_text()))
        return total


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
    metrics.publish()
    body = generate_latest(metrics.registry)
    # CONTENT_TYPE_LATEST carries its own charset parameter.
    response = web.Response(body=body)
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response
