"""Load bench: podsync against two bare aiohttp handlers, driven by wrk over loopback.

    python bench/load.py                 # ~4 minutes, prints a table
    python bench/load.py --json          # the same figures as JSON
    python bench/load.py --duration 2 --big 20000   # a quick check of the harness

It starts `bench/bare_server.py` and `python -m podsync serve` (temp TOML: fresh
temp DB, durability "full", no access log, log level warning, no login lockout)
on free loopback ports, seeds the list users through the sync service, and runs
each scenario with wrk (8 connections; Lua scripts make every sync body fresh).
Each podsync figure is printed as a ratio to its bare counterpart, then the
targets are checked. Needs `wrk` on PATH (Debian: apt-get install wrk).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness import (
    PASSWORD,
    WrkResult,
    bare_server,
    feed_head_path,
    finish_wrk,
    free_port,
    last_page_path,
    login,
    nonce,
    podsync_server,
    quiet_env,
    run_wrk,
    seed,
    start_wrk,
    with_limit,
    write_podsync_config,
)

BATCH = 30
LOGIN_CLIENTS = 20


def machine() -> dict[str, Any]:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "ram_gib": round(mem_kib / 1024**2, 1),
        "python": platform.python_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def sync_args(token: str) -> list[str]:
    """Arguments of sync.lua: a fresh nonce per wrk run keeps every URL and id new."""
    return [token, nonce(), str(BATCH)]


def measure_bare(
    base: str, workdir: Path, duration: float, warmup: float
) -> tuple[WrkResult, WrkResult]:
    run_wrk(base + "/bare/page", "get.lua", [""], workdir, warmup)
    get = run_wrk(base + "/bare/page", "get.lua", [""], workdir, duration)
    run_wrk(base + "/bare/sync", "sync.lua", sync_args(""), workdir, warmup)
    post = run_wrk(base + "/bare/sync", "sync.lua", sync_args(""), workdir, duration)
    return get, post


def pooled(a: WrkResult, b: WrkResult) -> WrkResult:
    """Two runs of one scenario as one: their requests over their time, mean latencies."""
    return WrkResult(
        a.requests + b.requests,
        a.seconds + b.seconds,
        (a.p50_ms + b.p50_ms) / 2,
        (a.p99_ms + b.p99_ms) / 2,
    )


def with_bare(row: dict[str, Any], bare_get: WrkResult, bare_post: WrkResult) -> dict[str, Any]:
    """The row with its bare counterpart (pooled over the run's start and end)."""
    kind = row.pop("bare", None)
    if kind is None:
        return row
    bare = bare_get if kind == "get" else bare_post
    return row | {
        "bare_per_second": round(bare.per_second, 1),
        "ratio_to_bare": round(row["per_second"] / bare.per_second, 3),
    }


def figure(result: WrkResult, bare: WrkResult | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "per_second": round(result.per_second, 1),
        "p50_ms": round(result.p50_ms, 2),
        "p99_ms": round(result.p99_ms, 2),
    }
    if bare is not None:
        row["bare_per_second"] = round(bare.per_second, 1)
        row["ratio_to_bare"] = round(result.per_second / bare.per_second, 3)
    return row


def run(duration: float, warmup: float, big: int, workdir: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {"machine": machine(), "duration_s": duration}
    rows: dict[str, dict[str, Any]] = {}

    podsync_port, bare_port = free_port(), free_port()
    config_path = write_podsync_config(workdir, podsync_port)
    sizes = {"bench-10k": 10_000, "bench-big": big}
    seed(config_path, {"bench-sync": 0, **sizes})
    # Both servers stay up for the whole run and the bare figures are measured at
    # its start and at its end: a ratio then compares runs minutes apart at most,
    # not a quiet minute with a busy one (the machine is shared).
    with podsync_server(workdir, podsync_port) as server, bare_server(workdir, bare_port) as bare:
        figures["rss_idle_mib"] = round(server.memory_kib()["VmRSS"] / 1024, 1)
        base = server.base
        bare_get_1, bare_post_1 = measure_bare(bare.base, workdir, duration, warmup)

        token = login(base, "bench-sync")
        run_wrk(base + "/api/v1/sync", "sync.lua", sync_args(token), workdir, warmup)
        sync = run_wrk(base + "/api/v1/sync", "sync.lua", sync_args(token), workdir, duration)
        rows["sync: batch of 30 subscribes"] = figure(sync, None) | {"bare": "post"}
        rows["sync: batch of 30 subscribes"]["actions_per_second"] = round(
            sync.per_second * BATCH, 1
        )

        list_tokens = {}
        for name, size in sizes.items():
            list_token = login(base, name)
            list_tokens[name] = list_token
            start = "/api/v1/subscriptions?limit=50"
            end = with_limit(
                last_page_path(base, list_token, with_limit(start, 500), "next_cursor"), 50
            )
            # start, end, start, end, each pair pooled: a drift in the machine's load
            # during the four runs cannot pass for a difference between the pages.
            runs: dict[str, list[WrkResult]] = {"start": [], "end": []}
            for _ in range(2):
                for where, path in (("start", start), ("end", end)):
                    run_wrk(base + path, "get.lua", [list_token], workdir, warmup)
                    runs[where].append(
                        run_wrk(base + path, "get.lua", [list_token], workdir, duration)
                    )
            results = {where: pooled(*pair) for where, pair in runs.items()}
            for where, result in results.items():
                rows[f"list {size:,}: page of 50 at the {where}"] = figure(result, None) | {
                    "bare": "get"
                }
            figures[f"list_{size}_end_over_start_cost"] = round(
                results["start"].per_second / results["end"].per_second, 3
            )

        token_10k = list_tokens["bench-10k"]
        feed = feed_head_path(base, token_10k)
        run_wrk(base + feed, "get.lua", [token_10k], workdir, warmup)
        poll = run_wrk(base + feed, "get.lua", [token_10k], workdir, duration)
        rows["change feed poll (10,000, at the head)"] = figure(poll, None) | {"bare": "get"}

        list_path = base + "/api/v1/subscriptions?limit=50"
        quiet = run_wrk(list_path, "get.lua", [token_10k], workdir, duration)
        logins = start_wrk(
            base + "/auth/login",
            "login.lua",
            ["bench-10k", PASSWORD],
            workdir,
            duration,
            connections=LOGIN_CLIENTS,
        )
        storm = finish_wrk(start_wrk(list_path, "get.lua", [token_10k], workdir, duration))
        login_result = finish_wrk(logins)
        rows["list 10,000 page, quiet"] = figure(quiet, None) | {"bare": "get"}
        rows["list 10,000 page, during login storm"] = figure(storm, None) | {"bare": "get"}
        rows[f"logins ({LOGIN_CLIENTS} concurrent)"] = figure(login_result, None)
        figures["storm_p99_over_quiet"] = round(storm.p99_ms / quiet.p99_ms, 2)

        memory = server.memory_kib()
        figures["rss_end_mib"] = round(memory["VmRSS"] / 1024, 1)
        figures["rss_peak_mib"] = round(memory["VmHWM"] / 1024, 1)
        bare_get_2, bare_post_2 = measure_bare(bare.base, workdir, duration, warmup)
    bare_get, bare_post = pooled(bare_get_1, bare_get_2), pooled(bare_post_1, bare_post_2)
    rows = {
        "bare GET (250 B JSON)": figure(bare_get, None)
        | {"start_end_per_second": [round(r.per_second, 1) for r in (bare_get_1, bare_get_2)]},
        "bare POST (30 rows)": figure(bare_post, None)
        | {"start_end_per_second": [round(r.per_second, 1) for r in (bare_post_1, bare_post_2)]},
        **{name: with_bare(row, bare_get, bare_post) for name, row in rows.items()},
    }
    figures["rows"] = rows
    figures["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    figures["targets"] = targets(figures, big)
    return figures


def targets(f: dict[str, Any], big: int) -> list[dict[str, Any]]:
    rows = f["rows"]
    sync = rows["sync: batch of 30 subscribes"]
    checks = [
        ("sync batches/s vs bare 30-row POST", sync["ratio_to_bare"], ">=", 0.40),
        ("sync p99 ms", sync["p99_ms"], "<=", 25.0),
        (
            "list page of 50 vs bare GET",
            rows["list 10,000: page of 50 at the start"]["ratio_to_bare"],
            ">=",
            0.35,
        ),
        ("end/start page cost at 10,000", f["list_10000_end_over_start_cost"], "<=", 1.2),
        (f"end/start page cost at {big:,}", f[f"list_{big}_end_over_start_cost"], "<=", 1.2),
        ("list p99 in login storm / quiet", f["storm_p99_over_quiet"], "<=", 3.0),
        ("idle RSS MiB", f["rss_idle_mib"], "<=", 50.0),
    ]
    return [
        {
            "target": name,
            "value": value,
            "limit": f"{op} {limit}",
            "met": value >= limit if op == ">=" else value <= limit,
        }
        for name, value, op, limit in checks
    ]


def print_table(f: dict[str, Any]) -> None:
    m = f["machine"]
    print(
        f"machine: {m['nproc']} cores, {m['cpu']}, {m['ram_gib']} GiB RAM, Python {m['python']}; "
        f"load average before {m['load_average']}, after {f['load_average_after']}"
    )
    print(f"wrk: 8 connections (logins: {LOGIN_CLIENTS}), {f['duration_s']} s per scenario\n")
    header = f"{'scenario':<42} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'bare/s':>9} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for name, row in f["rows"].items():
        bare = f"{row['bare_per_second']:>9.0f}" if "bare_per_second" in row else f"{'':>9}"
        ratio = f"{row['ratio_to_bare']:>6.2f}" if "ratio_to_bare" in row else f"{'':>6}"
        print(
            f"{name:<42} {row['per_second']:>9.1f} {row['p50_ms']:>8.2f} "
            f"{row['p99_ms']:>8.2f} {bare} {ratio}"
        )
    get, post = (
        f["rows"][k]["start_end_per_second"]
        for k in ("bare GET (250 B JSON)", "bare POST (30 rows)")
    )
    print(
        f"\nbare figures pool a run at the start and one at the end: "
        f"GET {get[0]:.0f} | {get[1]:.0f} req/s, POST {post[0]:.0f} | {post[1]:.0f} req/s"
    )
    sync = f["rows"]["sync: batch of 30 subscribes"]
    print(f"sync actions/s: {sync['actions_per_second']:.0f}")
    print(
        f"RSS: idle {f['rss_idle_mib']} MiB, at the end {f['rss_end_mib']} MiB, "
        f"peak {f['rss_peak_mib']} MiB\n"
    )
    for t in f["targets"]:
        mark = "met" if t["met"] else "MISSED"
        print(f"{t['target']:<42} {t['value']:>9} {t['limit']:>8}  {mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description="podsync load bench (needs wrk)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per scenario")
    parser.add_argument("--warmup", type=int, default=1, help="seconds of warm-up runs")
    parser.add_argument("--big", type=int, default=100_000, help="the big list's size")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, DBs)")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not on PATH (Debian: apt-get install wrk)")
    workdir = Path(tempfile.mkdtemp(prefix="podsync-bench-"))
    try:
        with quiet_env():
            figures = run(args.duration, args.warmup, args.big, workdir)
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print_table(figures)


if __name__ == "__main__":
    main()
