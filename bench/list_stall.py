"""How long the event loop is held while the simple API writes a 20,000-feed list.

    python bench/list_stall.py                            # this tree, SQLite and PostgreSQL
    python bench/list_stall.py --source A --source B      # two trees taken in turn
    python bench/list_stall.py --engine sqlite --runs 3

One `podsync serve` (the load bench's settings) per run, started through
bench/loop_timer.py, which writes every event-loop callback that takes over 2 ms to a
file. A user with `--feeds` subscriptions (the default limit: 20,000) GETs his list
as OPML, JSON and text (`/subscriptions/USER.FMT`), `--gets` times each, one after
another, while another user's app polls its subscriptions every 2 ms over a
kept-alive connection (as bench/upload_stall.py does). Printed per format: the
loop's callbacks over 5 ms and the time they held it (for each GET), the longest
one, and the poller's 99th percentile and slowest answer. Every answer must be 200.

PostgreSQL runs on a throwaway cluster of the tests' helper (tests/support/
pg_cluster.py: the test extra and Debian's postgresql), a new database for each run;
`--engine sqlite` leaves it out. With several `--source` trees the runs go A B,
B A, ... so that a drift of the machine falls on both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fill_cpu import post
from gpodder_sides import gpodder_login
from harness import Server, free_port, in_tree, quiet_env, seed, write_podsync_config
from upload_stall import poll_for

HERE = Path(__file__).resolve().parent
LISTER, READER = "lister", "reader"
FORMATS = ("opml", "json", "txt")
HELD_MS = 5.0


def get(base: str, path: str, session: str) -> int:
    """GET with a gpodder session cookie; the answer's size (raises on anything but 200)."""
    request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1:<port>
        f"{base}{path}", headers={"Cookie": f"sessionid={session}"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
        return len(response.read())


def callbacks(log: Path, start: float, end: float) -> list[float]:
    """The loop callbacks over 2 ms (ms) that started between `start` and `end`."""
    held = []
    for line in log.read_text().splitlines():
        at, took = line.split()
        if start <= float(at) <= end:
            held.append(float(took))
    return held


@contextmanager
def timed_server(config: Path, port: int, workdir: Path) -> Iterator[tuple[Server, Path]]:
    log = workdir / "loop-callbacks.txt"
    argv = [sys.executable, str(HERE / "loop_timer.py"), "--config", str(config), "serve"]
    os.environ["LOOP_TIMER_LOG"] = str(log)
    try:
        with Server(argv, port, "/healthz", workdir / "podsync.log") as server:
            yield server, log
    finally:
        del os.environ["LOOP_TIMER_LOG"]


def one_run(source: Path | None, url: str | None, feeds: int, gets: int) -> dict[str, Any]:
    with quiet_env(), in_tree(source), tempfile.TemporaryDirectory(prefix="list-stall-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        config = write_podsync_config(workdir, port, {"database": {"url": url}} if url else None)
        seed(config, workdir, {LISTER: feeds, READER: 0})
        with timed_server(config, port, workdir) as (server, log):
            reader = gpodder_login(server.base, READER)
            empty = b'{"add": [], "remove": []}'
            post(server.base, reader, f"/api/2/subscriptions/{READER}/phone.json", empty)
            poll_path = f"/api/2/subscriptions/{READER}/phone.json?since={int(time.time())}"
            lister = gpodder_login(server.base, LISTER)
            rows: dict[str, Any] = {}
            for fmt in FORMATS:
                path, sizes = f"/subscriptions/{LISTER}.{fmt}", []

                def fetch_all(path: str = path, sizes: list[int] = sizes) -> None:
                    for _ in range(gets):
                        sizes.append(get(server.base, path, lister))

                start = time.monotonic()
                poller = poll_for(port, poll_path, reader, None, fetch_all)
                end = time.monotonic()
                if poller.bad:
                    raise RuntimeError(f"{poller.bad} non-200 polls beside the .{fmt} list")
                held = callbacks(log, start, end)
                over = [ms for ms in held if ms > HELD_MS]
                polls = sorted(poller.times)
                rows[fmt] = {
                    "bytes": sizes[0],
                    "gets_per_s": round(gets / (end - start), 1),
                    "held_over_5ms_a_get": round(len(over) / gets, 1),
                    "ms_held_a_get": round(sum(over) / gets, 1),
                    "longest_ms": round(max(held, default=0.0), 1),
                    "poll_p99_ms": round(polls[int(len(polls) * 0.99)], 1),
                    "poll_max_ms": round(polls[-1], 1),
                }
    return {"source": str(source or "."), "load": round(os.getloadavg()[0], 2), "formats": rows}


@contextmanager
def postgres(wanted: bool) -> Iterator[Any]:
    """A throwaway cluster (or None when not wanted)."""
    if not wanted:
        yield None
        return
    sys.path.insert(0, str(HERE.parent))
    from tests.support.pg_cluster import Cluster, find_bin

    bin_dir = find_bin()
    if bin_dir is None:
        raise SystemExit("PostgreSQL's server is not installed (Debian: postgresql)")
    cluster = Cluster(bin_dir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, action="append", help="a tree whose podsync/ runs")
    ap.add_argument("--engine", choices=("sqlite", "postgresql"), action="append")
    ap.add_argument("--runs", type=int, default=2, help="runs of each tree on each engine")
    ap.add_argument("--feeds", type=int, default=20_000)
    ap.add_argument("--gets", type=int, default=10, help="GETs of each format a run")
    args = ap.parse_args()
    engines = args.engine or ["sqlite", "postgresql"]
    sources: list[Path | None] = list(args.source) if args.source else [None]
    runs: list[dict[str, Any]] = []
    with postgres("postgresql" in engines) as cluster:
        for n in range(args.runs):
            for engine in engines:
                for source in sources if n % 2 == 0 else sources[::-1]:
                    url = cluster.new_database() if engine == "postgresql" else None
                    run = {"engine": engine, **one_run(source, url, args.feeds, args.gets)}
                    runs.append(run)
                    print(json.dumps(run), flush=True)
    print(f"\na {args.feeds}-feed list, {args.gets} GETs of each format a run (median of runs):")
    for engine in engines:
        for source in sources:
            mine = [r for r in runs if r["engine"] == engine and r["source"] == str(source or ".")]
            for fmt in FORMATS:
                row = {
                    key: round(statistics.median(r["formats"][fmt][key] for r in mine), 1)
                    for key in mine[0]["formats"][fmt]
                    if key != "bytes"
                }
                print(f"  {engine}, {source or '.'}, .{fmt}: {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
