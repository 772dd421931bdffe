"""How long a big episode upload keeps one process's other requests waiting.

    python bench/upload_stall.py                          # this tree, 3 runs
    python bench/upload_stall.py --source A --source B    # two trees taken in turn
    python bench/upload_stall.py --plays 40000 --uploads 3 --max-body-mib 16   # raised limit

An app's first sync uploads a long history in bodies up to the body limit (about
4,000 plays a body at the default 1 MiB). One `podsync serve` (the load bench's
settings: durability full, no fetcher); a user with a history of 20,000 plays
uploads `--uploads` bodies of `--plays` new plays, one after another with
`--gap` seconds between them, while another user's app polls its subscriptions
(GET /api/2/subscriptions/USER/DEVICE.json?since=NOW over one kept-alive
connection) every 2 ms. The same poll runs for as long again with no upload
first. Printed per run: the poll's median, 99th percentile and slowest answer
with and without the uploads, how many answers took over 20 ms, and the uploads'
own times. Every answer must be 200. With several `--source` trees the runs go
A B, B A, ... so that a drift of the machine falls on both.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from fill_cpu import bodies, post
from gpodder_sides import gpodder_login
from harness import Server, free_port, in_tree, podsync_argv, quiet_env, seed, write_podsync_config

HEAVY, READER = "heavy", "reader"
HISTORY = 20  # uploads of 1,000 plays before the measure
SLOW_MS = 20.0


class Poller:
    """GETs of one path every 2 ms over one connection; each answer's time in ms."""

    def __init__(self, port: int, path: str, cookie: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.path, self.cookie = path, cookie
        self.times: list[float] = []
        self.bad = 0

    def run(self, until: threading.Event) -> None:
        while not until.is_set():
            started = time.perf_counter()
            self.conn.request("GET", self.path, headers={"Cookie": f"sessionid={self.cookie}"})
            response = self.conn.getresponse()
            response.read()
            self.times.append((time.perf_counter() - started) * 1000)
            if response.status != 200:
                self.bad += 1
            time.sleep(0.002)


def summary(times: list[float]) -> dict[str, Any]:
    ordered = sorted(times)
    return {
        "polls": len(ordered),
        "median_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(ordered[int(len(ordered) * 0.99)], 1),
        "max_ms": round(ordered[-1], 1),
        f"over_{SLOW_MS:.0f}ms": sum(1 for t in ordered if t > SLOW_MS),
    }


def poll_for(port: int, path: str, cookie: str, seconds: float | None, work: Any = None) -> Poller:
    """Poll while `work()` runs (or for `seconds`)."""
    poller, stop = Poller(port, path, cookie), threading.Event()
    thread = threading.Thread(target=poller.run, args=(stop,))
    thread.start()
    try:
        if work is None:
            time.sleep(seconds or 0)
        else:
            work()
    finally:
        stop.set()
        thread.join()
    return poller


def one_run(
    source: Path | None, uploads: list[bytes], gap: float, max_body: int | None = None
) -> dict[str, Any]:
    with quiet_env(), in_tree(source), tempfile.TemporaryDirectory(prefix="upload-stall-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        raised = {"server": {"max_body_bytes": max_body}} if max_body else None
        config = write_podsync_config(workdir, port, raised)
        seed(config, workdir, {HEAVY: 0, READER: 100})
        with Server(podsync_argv(config), port, "/healthz", workdir / "podsync.log") as server:
            heavy = gpodder_login(server.base, HEAVY)
            for body in bodies(HISTORY):
                post(server.base, heavy, f"/api/2/episodes/{HEAVY}.json", body)
            reader = gpodder_login(server.base, READER)
            empty = b'{"add": [], "remove": []}'
            post(server.base, reader, f"/api/2/subscriptions/{READER}/phone.json", empty)
            path = f"/api/2/subscriptions/{READER}/phone.json?since={int(time.time())}"
            took: list[float] = []

            def upload_all() -> None:
                for body in uploads:
                    time.sleep(gap)
                    started = time.perf_counter()
                    post(server.base, heavy, f"/api/2/episodes/{HEAVY}.json", body)
                    took.append((time.perf_counter() - started) * 1000)
                time.sleep(gap)

            busy_started = time.perf_counter()
            busy = poll_for(port, path, reader, None, upload_all)
            busy_s = time.perf_counter() - busy_started
            quiet = poll_for(port, path, reader, busy_s)
    if busy.bad or quiet.bad:
        raise RuntimeError(f"non-200 polls: {busy.bad} with the uploads, {quiet.bad} without")
    return {
        "source": str(source or "."),
        "load": round(os.getloadavg()[0], 2),
        "uploads_ms": [round(t) for t in took],
        "with_uploads": summary(busy.times),
        "without": summary(quiet.times),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, action="append", help="a tree whose podsync/ runs")
    ap.add_argument("--runs", type=int, default=3, help="runs of each tree")
    ap.add_argument("--uploads", type=int, default=10)
    ap.add_argument("--plays", type=int, default=4000, help="plays an upload")
    ap.add_argument("--gap", type=float, default=0.3, help="seconds between uploads")
    ap.add_argument(
        "--max-body-mib",
        type=int,
        help="server.max_body_bytes in MiB, for bodies past the default 1 MiB (--plays 40000:"
        " about 10 MiB)",
    )
    args = ap.parse_args()
    max_body = args.max_body_mib << 20 if args.max_body_mib else None
    sources: list[Path | None] = list(args.source) if args.source else [None]
    uploads = bodies(args.uploads, args.plays, first=HISTORY * 1000)
    runs = []
    for n in range(args.runs):
        for source in sources if n % 2 == 0 else sources[::-1]:
            run = one_run(source, uploads, args.gap, max_body)
            runs.append(run)
            print(json.dumps(run), flush=True)
    print(f"\nthe poll beside {args.uploads} uploads of {args.plays} plays (median of runs):")
    for source in sources:
        mine = [r for r in runs if r["source"] == str(source or ".")]
        row = {
            key: statistics.median(r["with_uploads"][key] for r in mine)
            for key in ("p99_ms", "max_ms", f"over_{SLOW_MS:.0f}ms")
        }
        quiet = statistics.median(r["without"]["max_ms"] for r in mine)
        upload = statistics.median(t for r in mine for t in r["uploads_ms"])
        print(
            f"  {source or '.'}: {row}, slowest without uploads {quiet} ms, an upload {upload} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
