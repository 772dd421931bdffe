"""PostgreSQL's sync batch beside SQLite's, on a cluster of its own: the PostgreSQL rows
of docs/performance.md in one command.

    python bench/pg_sync.py                      # 3 runs of 3 rounds of 4 s
    python bench/pg_sync.py --runs 1 --json      # one run, the figures as JSON
    python bench/pg_sync.py --check              # exit 0 only if PostgreSQL is here
    python bench/pg_sync.py --set shared_preload_libraries=pg_stat_statements
    python bench/pg_sync.py --set full_page_writes=off   # one durable setting replaced

It starts a throwaway PostgreSQL cluster with the tests' helper
(tests/support/pg_cluster.py), made durable as a server would be (fsync,
synchronous_commit and full_page_writes on, shared_buffers 256MB), then runs
`bench/load.py --database-url URL --only sync` RUNS times, each on an empty schema
of its own, and prints for each run the batches of 30 new subscribes a second on
SQLite and on PostgreSQL (one process and two), PostgreSQL's throughput over
SQLite's, and PostgreSQL's CPU a batch (its backends', from /proc), with the
machine's speed before and after each run (`rounds.speed_probe_ms`: a fixed loop's
CPU ms, lower is faster; on a VM whose speed moves, compare runs at similar probes).
The cluster is removed at the end. Needs PostgreSQL's server (Debian: postgresql),
wrk, and the test extra (the cluster helper imports asyncpg and pytest).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from rounds import speed_probe_ms  # noqa: E402

SQLITE, ONE, TWO = "sqlite, 1 process", "postgresql, 1 process", "postgresql, 2 processes"
# A server's settings, not the tests' (which skip fsync): later -c options win.
DURABLE = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "shared_buffers": "256MB",
}


def settings_of(url: str) -> dict[str, str]:
    import asyncpg

    async def read() -> dict[str, str]:
        conn = await asyncpg.connect(url)
        try:
            return {name: await conn.fetchval(f"SHOW {name}") for name in DURABLE}
        finally:
            await conn.close()

    return asyncio.run(read())


def one_run(url: str, rounds: int, seconds: int) -> dict[str, Any]:
    probe_before = speed_probe_ms()
    command = [sys.executable, str(HERE / "load.py"), "--database-url", url, "--only", "sync"]
    out = subprocess.run(
        [*command, "--json", "--rounds", str(rounds), "--seconds", str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, Any] = json.loads(out)
    sync = result["medians"]["sync"]
    return {
        "load_average": [result["load_average_before"][0], result["load_average_after"][0]],
        "speed_probe_ms": [probe_before, speed_probe_ms()],
        "sqlite_per_s": sync[SQLITE]["per_second"],
        "pg_per_s": sync[ONE]["per_second"],
        "pg_two_per_s": sync[TWO]["per_second"],
        "pg_over_sqlite": round(sync[ONE]["per_second"] / sync[SQLITE]["per_second"], 2),
        "pg_cpu_ms": sync[ONE]["postgres_cpu_ms"],
        "podsync_cpu_ms": sync[ONE]["podsync_cpu_ms"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--check", action="store_true", help="is PostgreSQL's server here?")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting on top of the durable ones; naming one of those replaces it"
        " (fsync=off: what durability costs) (repeatable)",
    )
    args = parser.parse_args()
    try:
        from tests.support.pg_cluster import Cluster, find_bin
    except ImportError as exc:  # asyncpg or pytest
        print(f"pg_sync.py needs the test extra (pip install '.[test]'): {exc}", file=sys.stderr)
        return 2
    bin_dir = find_bin()
    if bin_dir is None:
        print("PostgreSQL's server is not installed (Debian: postgresql)", file=sys.stderr)
        return 2
    if args.check:
        return 0
    if bad := [item for item in args.set if "=" not in item]:
        parser.error(f"--set takes NAME=VALUE, not {bad[0]!r}")
    chosen = {**DURABLE, **dict(item.split("=", 1) for item in args.set)}
    cluster = Cluster(bin_dir)
    try:
        cluster.start(**chosen)
        shown = settings_of(cluster.url())
        if shown != {name: chosen[name] for name in DURABLE}:
            raise SystemExit(f"the cluster did not take the settings asked for: {shown}")
        runs = [
            one_run(cluster.new_database(), args.rounds, args.seconds) for _ in range(args.runs)
        ]
    finally:
        cluster.stop()
    result = {
        "postgres": str(bin_dir),
        "settings": chosen,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "runs": runs,
        "pg_over_sqlite_median": statistics.median(r["pg_over_sqlite"] for r in runs),
        "pg_cpu_ms_median": statistics.median(r["pg_cpu_ms"] for r in runs),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    settings = result["settings"]
    print(f"PostgreSQL of {bin_dir}, {settings}; {args.rounds} rounds of {args.seconds} s")
    print(
        "| run | load | speed probe ms | SQLite /s | PostgreSQL /s (two processes) "
        "| over SQLite | PG CPU ms |"
    )
    print("|---|---|---|---:|---:|---:|---:|")
    for n, r in enumerate(runs, 1):
        print(
            f"| {n} | {r['load_average'][0]:.1f}-{r['load_average'][1]:.1f} | "
            f"{r['speed_probe_ms'][0]}-{r['speed_probe_ms'][1]} | "
            f"{r['sqlite_per_s']:.0f} | {r['pg_per_s']:.0f} ({r['pg_two_per_s']:.0f}) | "
            f"{r['pg_over_sqlite']} | {r['pg_cpu_ms']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
