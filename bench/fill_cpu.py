"""The server's CPU for the heavy user's fill: 200 gpodder episode uploads of 1,000 plays.

    python bench/fill_cpu.py                             # this tree, 3 runs
    python bench/fill_cpu.py --source A --source B       # two trees taken in turn
    python bench/fill_cpu.py --uploads 50 --runs 1       # a quick look
    python bench/fill_cpu.py --postgres                  # on PostgreSQL, its CPU too

The shared heavy-user bench times the fill's wall clock beside oPodSync's; on a shared
machine that moves by a third from run to run, with the client's own work in it. This
sends the same requests (2,000 subscriptions, then 1,000 plays an upload over 1,000
podcasts, each play of an episode of its own: what `heavy_user.py` sends, its
bodies made before the clock starts) to one `podsync serve` (the load bench's settings:
durability full, no fetcher) and reads the server's CPU (/proc/PID/stat, every thread)
over the uploads. With several `--source` trees the runs go A B, B A, A B, ...
so that a drift of the machine falls on both. Every answer must be 200.

With `--postgres` each run gets a new database of its own on a throwaway cluster
(made durable as `pg_sync.py` makes it; needs PostgreSQL's server and the test
extra), as a new instance has: its tables analysed while empty, autovacuum left to
its defaults. PostgreSQL's CPU over the uploads (its backends', from /proc) is
printed beside the server's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from engines import backends_cpu_now, backends_cpu_since
from gpodder_sides import gpodder_login
from harness import Server, free_port, in_tree, podsync_argv, quiet_env, seed, write_podsync_config
from rounds import cpu_seconds

USER = "heavy"
SUBSCRIPTIONS = 2_000
PODCASTS = 1_000  # podcasts played: the heavy-user bench's 200,000 actions / 200 an episode
DEVICES = [f"phone{i}" for i in range(5)]


def bodies(uploads: int, size: int = 1000, first: int = 0) -> list[bytes]:
    """The fill's episode uploads, as heavy_user.py builds them (`uploads` bodies of
    `size` plays, the plays numbered on from `first`)."""
    feeds = [f"https://feeds.example.org/show{i}/rss.xml" for i in range(SUBSCRIPTIONS)]
    made = []
    for start in range(first, first + uploads * size, size):
        plays = []
        for j in range(start, start + size):
            podcast = j % PODCASTS
            plays.append(
                {
                    "podcast": feeds[podcast % SUBSCRIPTIONS],
                    "episode": f"https://media.example.org/show{podcast}/ep{j // PODCASTS}.mp3",
                    "guid": f"show{podcast}-ep{j // PODCASTS}",
                    "action": "play",
                    "timestamp": time.strftime(
                        "%Y-%m-%dT%H:%M:%S", time.gmtime(1_600_000_000 + j * 60)
                    ),
                    "started": 0,
                    "position": 60 + j % 3000,
                    "total": 3600,
                    "device": DEVICES[j % 5],
                }
            )
        made.append(json.dumps(plays).encode())
    return made


def post(base: str, session: str, path: str, body: bytes) -> None:
    request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1:<port>
        base + path,
        data=body,
        headers={"Content-Type": "application/json", "Cookie": f"sessionid={session}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
        if response.status != 200:
            raise RuntimeError(f"{path}: {response.status}")
        response.read()


def one_run(
    source: Path | None, uploads: list[bytes], database_url: str | None = None
) -> dict[str, Any]:
    """A fresh server and database; the fill's subscriptions, then the timed uploads."""
    with quiet_env(), in_tree(source), tempfile.TemporaryDirectory(prefix="fill-cpu-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        overrides = {"database": {"url": database_url}} if database_url else None
        config = write_podsync_config(workdir, port, overrides)
        seed(config, workdir, {USER: 0})
        with Server(podsync_argv(config), port, "/healthz", workdir / "podsync.log") as server:
            session = gpodder_login(server.base, USER)  # a cookie: no password check a POST
            empty = b'{"add": [], "remove": []}'
            for device in DEVICES:
                post(server.base, session, f"/api/2/subscriptions/{USER}/{device}.json", empty)
            feeds = [f"https://feeds.example.org/show{i}/rss.xml" for i in range(SUBSCRIPTIONS)]
            for start in range(0, SUBSCRIPTIONS, 500):
                body = json.dumps({"add": feeds[start : start + 500], "remove": []}).encode()
                post(server.base, session, f"/api/2/subscriptions/{USER}/{DEVICES[0]}.json", body)
            pg_before = backends_cpu_now(database_url) if database_url else {}
            cpu_before, wall_before = cpu_seconds(server.pid)[0], time.perf_counter()
            for body in uploads:
                post(server.base, session, f"/api/2/episodes/{USER}.json", body)
            cpu = cpu_seconds(server.pid)[0] - cpu_before
            wall = time.perf_counter() - wall_before
            pg_cpu = backends_cpu_since(database_url, pg_before) if database_url else None
    return {
        "source": str(source or "."),
        "load": round(os.getloadavg()[0], 2),
        "server_cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "cpu_ms_an_upload": round(cpu * 1000 / len(uploads), 2),
        **({} if pg_cpu is None else {"postgres_cpu_s": round(pg_cpu, 2)}),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, action="append", help="a tree whose podsync/ runs")
    ap.add_argument("--runs", type=int, default=3, help="runs of each tree")
    ap.add_argument("--uploads", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--postgres", action="store_true", help="a new PostgreSQL database a run")
    args = ap.parse_args()
    sources: list[Path | None] = list(args.source) if args.source else [None]
    uploads = bodies(args.uploads)
    runs = []
    with _databases(args.postgres) as new_database:
        for n in range(args.runs):
            for source in sources if n % 2 == 0 else sources[::-1]:
                run = one_run(source, uploads, new_database())
                runs.append(run)
                if not args.json:
                    print(json.dumps(run), flush=True)
    if args.json:
        print(json.dumps({"uploads": args.uploads, "runs": runs}))
        return 0
    print(f"\nserver CPU of {args.uploads} uploads of 1,000 plays (median of {args.runs} runs):")
    for source in sources:
        mine = [r["server_cpu_s"] for r in runs if r["source"] == str(source or ".")]
        print(f"  {source or '.'}: {statistics.median(mine):.2f} s ({min(mine)}-{max(mine)})")
        pg = [
            r["postgres_cpu_s"]
            for r in runs
            if r["source"] == str(source or ".") and "postgres_cpu_s" in r
        ]
        if pg:
            print(f"    PostgreSQL's: {statistics.median(pg):.2f} s ({min(pg)}-{max(pg)})")
    return 0


@contextlib.contextmanager
def _databases(postgres: bool) -> Iterator[Callable[[], str | None]]:
    """A maker of each run's database URL: None (SQLite) or a new PostgreSQL database
    on a durable throwaway cluster, removed at the end."""
    if not postgres:
        yield lambda: None
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pg_sync import DURABLE

    from tests.support.pg_cluster import Cluster, find_bin

    bin_dir = find_bin()
    if bin_dir is None:
        raise SystemExit("PostgreSQL's server is not installed (Debian: postgresql)")
    cluster = Cluster(bin_dir)
    try:
        cluster.start(**DURABLE)
        yield cluster.new_database
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
