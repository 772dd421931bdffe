"""What `server.metrics = true` costs the hot paths: a list page and a sync batch.

    python bench/metrics_cost.py                  # ~2 minutes, prints a table
    python bench/metrics_cost.py --duration 3 --rounds 2   # a quick look
    python bench/metrics_cost.py --micro          # the metrics code alone, in-process
    python bench/metrics_cost.py --control        # both off: the bench's own bias

Two `podsync serve` processes run side by side for the whole bench, one with
metrics off and one with them on, each on its own fresh database with one user of
1,000 subscriptions. wrk (8 connections) then drives each scenario on both,
alternating off, on, on, off, ... so that a drift in the shared machine's load falls
on both sides alike. Two figures per side: requests per second (wall clock, which
other processes on a shared machine disturb a lot), and the server process's CPU
time per request (user + system from /proc, which they disturb far less): the
cost of metrics is the difference of the second. On a busy shared machine even
that drifts by ~10%; `--micro` times the metrics code alone (the middleware around a
request, and counting a batch's 30 results) in process CPU time, which the load of
other processes hardly moves.
Needs `wrk` on PATH (Debian: apt-get install wrk) and Linux's /proc.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from harness import (
    Server,
    free_port,
    login,
    nonce,
    quiet_env,
    run_wrk,
    seed,
    write_podsync_config,
)

BATCH = 30
LIST_SIZE = 1000


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (and of its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def micro(repeat: int = 100_000) -> None:
    """CPU time the metrics add to one request and to one batch of 30 results."""
    from aiohttp import web
    from aiohttp.test_utils import make_mocked_request

    from podsync.config import Config, ServerConfig
    from podsync.web.app import create_app
    from podsync.web.keys import METRICS
    from podsync.web.ops.metrics import metrics_middleware

    async def run() -> None:
        app = create_app(Config(server=ServerConfig(metrics=True)))
        request = make_mocked_request("GET", "/api/v1/subscriptions/abc", app=app)
        match = await app.router.resolve(request)
        match.add_app(app)
        request._match_info = match  # what the router does before the middlewares
        response = web.Response(text="x")

        async def handler(_: web.Request) -> web.StreamResponse:
            return response

        statuses = ["success"] * 25 + ["rejected"] * 5
        for _ in range(3):
            start = time.process_time()
            for _ in range(repeat):
                await handler(request)
            bare = time.process_time() - start
            start = time.process_time()
            for _ in range(repeat):
                await metrics_middleware(request, handler)
            wrapped = time.process_time() - start
            start = time.process_time()
            for _ in range(repeat // 10):
                app[METRICS].count_actions(statuses)
            batch = (time.process_time() - start) / (repeat // 10)
            print(
                f"metrics middleware: {(wrapped - bare) / repeat * 1e6:.1f} us CPU a request; "
                f"counting a batch of 30 results: {batch * 1e6:.1f} us"
            )

    asyncio.run(run())


def server(workdir: Path, metrics: bool) -> Server:
    port = free_port()
    config = write_podsync_config(workdir, port, {"server": {"metrics": metrics}})
    assert ("metrics = true" in config.read_text()) == metrics
    seed(config, workdir, {"bench": LIST_SIZE})
    argv = [sys.executable, "-m", "podsync", "--config", str(config), "serve"]
    return Server(argv, port, "/healthz", workdir / "podsync.log")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=6.0, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=4, help="off/on pairs per scenario")
    parser.add_argument("--micro", action="store_true", help="time the metrics code alone")
    parser.add_argument(
        "--control",
        action="store_true",
        help="metrics off on both servers: the difference is then the bench's own bias",
    )
    args = parser.parse_args()
    if args.micro:
        micro()
        return
    with quiet_env(), tempfile.TemporaryDirectory() as tmp:
        off_dir, on_dir = Path(tmp, "off"), Path(tmp, "on")
        off_dir.mkdir()
        on_dir.mkdir()
        with server(off_dir, False) as off, server(on_dir, not args.control) as on:
            tokens = {off.base: login(off.base, "bench"), on.base: login(on.base, "bench")}
            scenarios = {
                "list: page of 50": ("/api/v1/subscriptions?limit=50", "get.lua", False),
                f"sync: batch of {BATCH} subscribes": ("/api/v1/sync", "sync.lua", True),
            }
            print(
                f"{'scenario':32} {'off r/s':>9} {'on r/s':>9} "
                f"{'off CPU/req':>12} {'on CPU/req':>12} {'CPU cost':>9}"
            )
            for name, (path, script, is_sync) in scenarios.items():
                totals = {off.base: 0.0, on.base: 0.0}
                cpu = {off.base: 0.0, on.base: 0.0}
                served = {off.base: 0, on.base: 0}
                for round_ in range(args.rounds):
                    order = (off, on) if round_ % 2 == 0 else (on, off)
                    for side in order:
                        token = tokens[side.base]
                        wrk_args = [token, nonce(), str(BATCH)] if is_sync else [token]
                        workdir = Path(tmp)
                        run_wrk(side.base + path, script, wrk_args, workdir, 1)  # warm-up
                        assert side.proc is not None
                        before = cpu_seconds(side.proc.pid)
                        result = run_wrk(side.base + path, script, wrk_args, workdir, args.duration)
                        cpu[side.base] += cpu_seconds(side.proc.pid) - before
                        served[side.base] += result.requests
                        totals[side.base] += result.per_second
                rate_off = totals[off.base] / args.rounds
                rate_on = totals[on.base] / args.rounds
                us_off = cpu[off.base] / served[off.base] * 1e6
                us_on = cpu[on.base] / served[on.base] * 1e6
                cost = (us_on - us_off) / us_off * 100
                print(
                    f"{name:32} {rate_off:>9.0f} {rate_on:>9.0f} "
                    f"{us_off:>10.0f}us {us_on:>10.0f}us {cost:>8.1f}%"
                )


if __name__ == "__main__":
    main()
