"""Load bench: podsync against bare aiohttp handlers, in interleaved rounds, with wrk.

    python bench/load.py                       # ~4 minutes, prints per-round figures and a table
    python bench/load.py --markdown            # the README's table
    python bench/load.py --json                # everything as JSON
    python bench/load.py --only list,feed --seconds 2 --rounds 1    # a quick look
    python bench/load.py --set server.metrics=true --set log.format=json

The machine's load drifts within minutes, so a bare figure taken at another moment
is no ceiling. Each scenario therefore runs rounds of (bare, podsync) back to back,
`--seconds` each (default 4), the order flipped every round so a steady drift
favours neither side; the ratio is taken per round, and the table shows the median
ratio and the median p99 over `--rounds` (default 3). The load average is noted at
the start and at the end. Scenarios (`--only`):

  rss    idle RSS of the server and of the bare aiohttp process, after start-up
  list   GET a page of 50 of a 10,000-subscription list / bare GET (fixed 250 B JSON)
  feed   poll the change feed at its head (nothing new) / bare GET
  floor  the list page's and the poll's store calls alone on a bare handler / bare GET
         (bench/floor_server.py: no target; what is left above it is podsync's own code)
  pages  the end page / the first page, at 10,000 and at --big (podsync both sides)
  storm  list p99 during a login storm (20 clients) / quiet (podsync both sides)
  sync   POST a batch of 30 fresh subscribes, durability full / bare 30-row insert at FULL;
         its p99 over the bare insert's p99 of the same round

podsync runs as `python -m podsync serve` with a temp TOML (harness.BASE_CONFIG plus
any `--set section.key=value`), seeded with the real CLI (`user add`, `opml import`);
bench/bare_server.py is the ceiling. wrk: 2 threads, 8 connections. Needs `wrk` on
PATH (Debian: apt-get install wrk).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import engines
from harness import (
    Overrides,
    Server,
    bare_server,
    call,
    feed_head_path,
    floor_server,
    free_port,
    last_page_path,
    login,
    parse_sets,
    podsync_server,
    quiet_env,
    seed,
    with_limit,
    write_podsync_config,
)
from rounds import (
    BATCH,
    LOGIN_CLIENTS,
    Settings,
    Side,
    against_bare,
    check,
    get_side,
    median,
    podsync_pair,
    sync_side,
)
from tables import loadavg, machine, print_markdown, print_text

SCENARIOS = ("rss", "list", "feed", "floor", "pages", "storm", "sync")
LIST_PATH = "/api/v1/subscriptions?limit=50"


def measure(
    pod: Server, bare: Server, floor: Server | None, only: set[str], big: int, s: Settings
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    base = pod.base
    bare_get = get_side(bare.pid, bare.base + "/bare/page")
    if "rss" in only:
        time.sleep(1)  # let start-up's garbage settle
        rss = round(pod.memory_kib()["VmRSS"] / 1024, 1)
        bare_rss = round(bare.memory_kib()["VmRSS"] / 1024, 1)
        above = round(rss - bare_rss, 1)
        rows.append(
            {
                "scenario": "idle RSS, podsync and a bare aiohttp process",
                "unit": "MiB above bare",
                "ratio": above,
                "podsync_mib": rss,
                "bare_mib": bare_rss,
                "checks": [check(above, "<=", 6, "{} MiB above bare")],
            }
        )
    token_10k = login(base, "bench-10k") if only & {"list", "feed", "pages", "storm"} else ""
    if "list" in only:
        call(base, "GET", LIST_PATH, token=token_10k)  # a probe: 200 with JSON, or raise
        row = against_bare(
            "list page of 50 (user with 10k subscriptions), rendered per request",
            bare_get,
            get_side(pod.pid, base + LIST_PATH, token_10k),
            s,
            "of a bare GET",
            0.35,
            5.0,
        )
        rows.append(row)
    if "feed" in only:
        feed = get_side(pod.pid, base + feed_head_path(base, token_10k), token_10k)
        rows.append(
            against_bare(
                "change-feed poll at the head (nothing new)",
                bare_get,
                feed,
                s,
                "of a bare GET",
                0.5,
                None,
            )
        )
    if floor is not None:
        for path, what in (("/floor/list", "a list page"), ("/floor/poll", "a poll at the head")):
            row = against_bare(
                f"floor: the store calls of {what} alone, on a bare handler",
                bare_get,
                get_side(floor.pid, floor.base + path),
                s,
                "of a bare GET",
                0,
                None,
            )
            row["checks"] = []  # no target: it shows what the targets leave podsync
            rows.append(row)
    if "pages" in only:
        users = {"bench-10k": 10_000} | ({"bench-big": big} if big else {})
        for user, size in users.items():
            token = token_10k if user == "bench-10k" else login(base, user)
            last = last_page_path(base, token, with_limit(LIST_PATH, 500), "next_cursor")
            end = get_side(pod.pid, base + with_limit(last, 50), token)
            rows.append(
                podsync_pair(
                    f"end page / first page at {size:,}",
                    ("first", "end"),
                    get_side(pod.pid, base + LIST_PATH, token),
                    end,
                    s,
                    lambda first, end: first.per_second / end.per_second,
                    "time per end page / per first page",
                    1.2,
                    lambda first, end: end.cpu_ms / first.cpu_ms,
                )
            )
    if "storm" in only:
        quiet = get_side(pod.pid, base + LIST_PATH, token_10k)
        storm = Side(
            quiet.url, quiet.script, quiet.args, pod.pid, (base + "/auth/login", "bench-10k")
        )
        rows.append(
            podsync_pair(
                f"list p99 during a login storm ({LOGIN_CLIENTS} clients) / quiet",
                ("quiet", "storm"),
                quiet,
                storm,
                s,
                lambda q, st: st.p99_ms / q.p99_ms,
                "p99 storm / quiet",
                3.0,
            )
        )
    if "sync" in only:
        token = login(base, "bench-sync")
        row = against_bare(
            f"sync batch of {BATCH} subscribes, durability full",
            sync_side(bare.pid, bare.base + "/bare/sync"),
            sync_side(pod.pid, base + "/api/v1/sync", token),
            s,
            f"of a bare {BATCH}-row insert at FULL",
            0.55,
            None,
            p99_ratio_max=2.0,
        )
        row["actions_per_second"] = median([p["per_second"] * BATCH for p in row["podsync"]], 0)
        rows.append(row)
    if "rss" in only:
        memory = pod.memory_kib()
        rows[0]["after_run_mib"] = round(memory["VmRSS"] / 1024, 1)
        rows[0]["peak_mib"] = round(memory["VmHWM"] / 1024, 1)
    return rows


def run(only: set[str], big: int, overrides: Overrides, s: Settings) -> dict[str, Any]:
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    pod_port, bare_port = free_port(), free_port()
    config = write_podsync_config(s.workdir, pod_port, overrides)
    users = {"bench-sync": 0} if "sync" in only else {}
    if only & {"list", "feed", "floor", "pages", "storm"}:
        users["bench-10k"] = 10_000
    if "pages" in only and big:
        users["bench-big"] = big
    seed(config, s.workdir, users)
    load_before = loadavg()
    with (
        podsync_server(s.workdir, config, pod_port) as pod,
        bare_server(s.workdir, bare_port) as bare,
        contextlib.ExitStack() as more,
    ):
        floor = None
        if "floor" in only:
            floor = more.enter_context(floor_server(s.workdir, free_port(), "bench-10k"))
        rows = measure(pod, bare, floor, only, big, s)
    return {
        "started": started,
        "machine": machine(),
        "load_average_before": load_before,
        "load_average_after": loadavg(),
        "seconds": s.seconds,
        "rounds": s.rounds,
        "wrk": "-t2 -c8",
        "overrides": overrides,
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="podsync load bench (needs wrk)")
    parser.add_argument("--seconds", type=int, default=4, help="seconds per side per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="seconds per side before round 1")
    parser.add_argument("--big", type=int, default=100_000, help="the big list (0: none)")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="a podsync config value for this run (repeatable)",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON")
    out.add_argument("--markdown", action="store_true", help="print the README's table only")
    parser.add_argument("--save", type=Path, help="also write the JSON figures to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, DBs)")
    parser.add_argument(
        "--database-url",
        help="an empty PostgreSQL database: compare SQLite (1 process) with PostgreSQL "
        "(1 and 2 processes) on list, feed and sync instead (bench/engines.py)",
    )
    args = parser.parse_args()
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    if unknown := only - set(SCENARIOS):
        parser.error(f"unknown scenarios {sorted(unknown)}; choose from {', '.join(SCENARIOS)}")
    try:
        overrides = parse_sets(args.set)
    except ValueError as exc:
        parser.error(str(exc))
    if shutil.which("wrk") is None:
        sys.exit("wrk is not on PATH (Debian: apt-get install wrk)")
    if importlib.util.find_spec("aiosqlite") is None:
        # podsync no longer needs it; the ceiling keeps it, so that ratios stay
        # comparable with the figures measured before issue 12
        sys.exit("bench/bare_server.py needs aiosqlite: pip install aiosqlite")
    workdir = Path(tempfile.mkdtemp(prefix="podsync-bench-"))
    if args.database_url:
        compare_engines(args, only, workdir)
        return
    settings = Settings(args.seconds, args.rounds, args.warmup, workdir)
    try:
        with quiet_env():
            figures = run(only, args.big, overrides, settings)
    finally:
        if args.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.save:
        args.save.write_text(json.dumps(figures, indent=2) + "\n")
    if args.json:
        print(json.dumps(figures, indent=2))
    elif args.markdown:
        print_markdown(figures)
    else:
        print_text(figures)


def compare_engines(args: argparse.Namespace, only: set[str], workdir: Path) -> None:
    try:
        with quiet_env():
            figures = engines.run(args.database_url, only, workdir, args.seconds, args.rounds)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.save:
        args.save.write_text(json.dumps(figures, indent=2) + "\n")
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        engines.print_markdown(figures)


if __name__ == "__main__":
    main()
