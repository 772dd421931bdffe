"""`load.py --database-url URL`: the same scenarios on SQLite with one process, and
on PostgreSQL with one and with two processes, in one run.

URL names an empty PostgreSQL database (the bench seeds it). Every server is up
for the whole run; each round runs every scenario on every setup, the setup order
flipped each round. Two processes share wrk's 8 connections (two wrk of 4, one
per process; their requests add up). Beside the podsync processes' CPU time per
request, the PostgreSQL backends' CPU per request is read from /proc when the
server runs on this machine (the figure a capacity estimate needs).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

from harness import (
    Server,
    feed_head_path,
    finish_wrk,
    free_port,
    login,
    nonce,
    seed,
    start_wrk,
    write_podsync_config,
)
from rounds import BATCH, cpu_seconds, median

LIST_PATH = "/api/v1/subscriptions?limit=50"
SETUPS = ("sqlite, 1 process", "postgresql, 1 process", "postgresql, 2 processes")
LIST_SIZE = 10_000


def _server(workdir: Path, config: Path, port: int, name: str) -> Server:
    argv = [sys.executable, "-m", "podsync", "--config", str(config), "serve", "--port", str(port)]
    return Server(argv, port, "/healthz", workdir / f"{name}.log")


def _backend_pids(url: str) -> list[int]:
    """The PostgreSQL backends serving `url`'s database (local server only)."""
    import asyncio

    import asyncpg

    async def pids() -> list[int]:
        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
            return [int(r[0]) for r in rows]
        finally:
            await conn.close()

    return asyncio.run(pids())


def _cpu(pids: list[int]) -> float:
    return sum(_cpu_each(pids).values())


def _cpu_each(pids: list[int]) -> dict[int, float]:
    """CPU seconds of each process still running."""
    found = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            found[pid] = cpu_seconds(pid)[0]
    return found


def backends_cpu_now(pg_url: str) -> dict[int, float]:
    """CPU seconds of each backend serving `pg_url`'s database: `before` for
    `backends_cpu_since`."""
    return _cpu_each(_backend_pids(pg_url))


def backends_cpu_since(pg_url: str, before: dict[int, float]) -> float:
    """The backends' CPU since `before`, counting those that started meanwhile in full:
    podsync opens its pool's connections as the load needs them, so in a server's first
    round some backends exist only at its end (left out, they made that round's figure
    a third of the others'). A backend that ended meanwhile cannot be read: left out."""
    after = backends_cpu_now(pg_url)
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def _drive(
    bases: list[str],
    pids: list[int],
    pg_url: str | None,
    scenario: str,
    token: dict[str, str],
    paths: dict[str, str],
    workdir: Path,
    seconds: int,
) -> dict[str, float]:
    """One timed run of a scenario over the given processes."""
    pg_before = backends_cpu_now(pg_url) if pg_url else {}
    cpu_before = _cpu(pids)
    connections = 8 // len(bases)
    procs = []
    for n, base in enumerate(bases):
        # Each wrk gets its own script file: writing one while another wrk reads it
        # would leave that one without its reporter.
        own_dir = workdir / f"wrk-{n}"
        own_dir.mkdir(exist_ok=True)
        if scenario == "sync":
            url, script, args = (
                base + "/api/v1/sync",
                "sync.lua",
                [token["sync"], nonce(), str(BATCH)],
            )
        else:
            url, script, args = base + paths[scenario], "get.lua", [token["read"]]
        procs.append(start_wrk(url, script, args, own_dir, seconds, connections=connections))
    results = [finish_wrk(p) for p in procs]
    requests = sum(r.requests for r in results)
    per_second = sum(r.per_second for r in results)
    return {
        "per_second": round(per_second, 1),
        "p99_ms": round(max(r.p99_ms for r in results), 2),
        "podsync_cpu_ms": round(1000 * (_cpu(pids) - cpu_before) / max(requests, 1), 3),
        "postgres_cpu_ms": round(
            1000 * (backends_cpu_since(pg_url, pg_before) if pg_url else 0.0) / max(requests, 1), 3
        ),
    }


def run(
    database_url: str, only: set[str], workdir: Path, seconds: int, rounds: int
) -> dict[str, Any]:
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    ports = [free_port() for _ in range(3)]
    (workdir / "sqlite").mkdir()
    (workdir / "pg").mkdir()
    # Every sync batch creates 30 entities, and both PostgreSQL setups write to one
    # database: at the default limit of 100,000 entities a user, PostgreSQL's user
    # reached it within a run (SQLite's later) and its batches after that created
    # nothing, a cheaper batch than the one measured.
    unlimited = {"max_subscriptions_per_user": 10_000_000, "max_entities_per_user": 10_000_000}
    sqlite_config = write_podsync_config(workdir / "sqlite", ports[0], {"sync": unlimited})
    pg_config = write_podsync_config(
        workdir / "pg", ports[1], {"database": {"url": database_url}, "sync": unlimited}
    )
    users = {"bench-sync": 0, "bench-10k": LIST_SIZE}
    seed(sqlite_config, workdir / "sqlite", users)
    seed(pg_config, workdir / "pg", users)
    scenarios = [s for s in ("list", "feed", "sync") if s in only] or ["list", "feed", "sync"]
    figures: dict[str, dict[str, list[dict[str, float]]]] = {
        s: {setup: [] for setup in SETUPS} for s in scenarios
    }
    load_before = os.getloadavg()
    with (
        _server(workdir, sqlite_config, ports[0], "sqlite") as lite,
        _server(workdir, pg_config, ports[1], "pg-1") as pg1,
        _server(workdir, pg_config, ports[2], "pg-2") as pg2,
    ):
        setups = {
            SETUPS[0]: ([lite], None),
            SETUPS[1]: ([pg1], database_url),
            SETUPS[2]: ([pg1, pg2], database_url),
        }
        tokens = {
            name: {
                "read": login(servers[0].base, "bench-10k"),
                "sync": login(servers[0].base, "bench-sync"),
            }
            for name, (servers, _) in setups.items()
        }
        paths = {
            name: {"list": LIST_PATH, "feed": feed_head_path(servers[0].base, tokens[name]["read"])}
            for name, (servers, _) in setups.items()
        }
        for i in range(rounds):
            order = list(SETUPS) if i % 2 == 0 else list(reversed(SETUPS))
            for scenario in scenarios:
                for name in order:
                    servers, url = setups[name]
                    figures[scenario][name].append(
                        _drive(
                            [s.base for s in servers],
                            [s.pid for s in servers],
                            url,
                            scenario,
                            tokens[name],
                            paths[name],
                            workdir,
                            seconds,
                        )
                    )
    table = {
        scenario: {
            name: {key: median([r[key] for r in runs], 3) for key in runs[0]}
            for name, runs in per_setup.items()
        }
        for scenario, per_setup in figures.items()
    }
    return {
        "started": started,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "seconds": seconds,
        "rounds": rounds,
        "medians": table,
        "runs": figures,
    }


def print_markdown(result: dict[str, Any]) -> None:
    before, after = result["load_average_before"][0], result["load_average_after"][0]
    print(
        f"{result['started']}, {result['rounds']} rounds of {result['seconds']} s, "
        f"load {before:.1f} -> {after:.1f}"
    )
    print()
    print("| scenario | setup | requests/s | p99 ms | podsync CPU ms/req | PostgreSQL CPU ms/req |")
    print("|---|---|---:|---:|---:|---:|")
    for scenario, per_setup in result["medians"].items():
        for name, m in per_setup.items():
            print(
                f"| {scenario} | {name} | {m['per_second']:.0f} | {m['p99_ms']:.1f} | "
                f"{m['podsync_cpu_ms']:.3f} | {m['postgres_cpu_ms']:.3f} |"
            )
