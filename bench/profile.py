"""Profile podsync under one load-bench scenario with py-spy; print where the time goes.

    python bench/profile.py list            # GET a page of 50 of a 10,000 list
    python bench/profile.py feed            # poll the change feed at its head
    python bench/profile.py sync            # POST batches of 30 fresh subscribes
    python bench/profile.py ep_push         # gpodder: POST 30 play actions on new episodes
    python bench/profile.py ep_pull         # gpodder: GET 1,000 episode actions (since=0)
    python bench/profile.py sub_push        # gpodder: POST 30 new feeds in "add"
    python bench/profile.py floor_list      # bench/floor_server.py's list page (no podsync app)
    python bench/profile.py floor_poll      # bench/floor_server.py's poll at the head
    python bench/profile.py sync --native --seconds 15 --out /tmp/sync-prof

The server (`python -m podsync serve`, the same temp TOML and seeding as
bench/load.py, `--set` works alike) is set up and warmed up, then `py-spy record
--pid --format raw` (all threads; its idle filter misses threads parked on a lock,
so summary.py sets those apart) samples it while wrk drives the scenario as
bench/load.py does. The collapsed stacks are then summarised (summary.py): CPU per request by
group (thread hops / aiosqlite, itsdangerous, json, aiohttp, SQL, rules, ...), each
thread's share, and the top frames by self and by total time. `--out DIR` keeps the
raw stacks (feed them to flamegraph.pl or speedscope) and the summary text.
`--native` adds C frames (SQLite's own time becomes visible; slower sampling).
Needs py-spy (pip install py-spy) and wrk, and ptrace rights over the server.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpodder_sides import (
    ep_pull_side,
    ep_push_side,
    gpodder_login,
    seed_episodes,
    sub_push_side,
)
from harness import (
    Overrides,
    Server,
    call,
    feed_head_path,
    floor_server,
    free_port,
    login,
    parse_sets,
    podsync_server,
    quiet_env,
    seed,
    write_podsync_config,
)
from rounds import Side, get_side, sync_side
from summary import summarise

SCENARIOS = ("list", "feed", "sync", "ep_push", "ep_pull", "sub_push", "floor_list", "floor_poll")
LIST_PATH = "/api/v1/subscriptions?limit=50"


def scenario_side(name: str, base: str, pid: int) -> Side:
    if name in ("ep_push", "ep_pull", "sub_push"):
        session = gpodder_login(base, "bench-episodes")
        if name == "sub_push":
            return sub_push_side(pid, base, "bench-episodes", session)
        if name == "ep_push":
            return ep_push_side(pid, base, "bench-episodes", session)
        seed_episodes(base, "bench-episodes", session)
        return ep_pull_side(pid, base, "bench-episodes", session)
    if name == "sync":
        return sync_side(pid, base + "/api/v1/sync", login(base, "bench-sync"))
    token = login(base, "bench-10k")
    if name == "list":
        call(base, "GET", LIST_PATH, token=token)  # a probe: 200 with JSON, or raise
        return get_side(pid, base + LIST_PATH, token)
    return get_side(pid, base + feed_head_path(base, token), token)


def profile(
    name: str, seconds: int, rate: int, native: bool, overrides: Overrides, workdir: Path
) -> tuple[Path, str, int]:
    """Run the scenario with py-spy attached; return the stacks' path, a header, the
    requests. py-spy attaches after the set-up (seeding, logins, reading the feed to
    its head) and a 1 s warm-up, so none of those is in the profile."""
    port = free_port()
    config = write_podsync_config(workdir, port, overrides)
    users = {"sync": "bench-sync"} | dict.fromkeys(
        ("ep_push", "ep_pull", "sub_push"), "bench-episodes"
    )
    seed(config, workdir, {users[name]: 0} if name in users else {"bench-10k": 10_000})
    stacks = workdir / f"{name}.stacks.txt"
    with quiet_env(), _server(name, workdir, config, port) as server:
        if name.startswith("floor_"):  # the floor reads the database podsync made
            path = "/floor/list" if name == "floor_list" else "/floor/poll"
            side = get_side(server.pid, server.base + path)
        else:
            side = scenario_side(name, server.base, server.pid)
        side.run(workdir, 1)  # warm-up
        argv = ["py-spy", "record", "--pid", str(server.pid), "--duration", str(seconds + 1)]
        argv += ["--format", "raw", "--rate", str(rate), "--threads", "--output", str(stacks)]
        argv += ["--native"] if native else []
        spy = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)  # py-spy attaching; it records 0.5 s on either side of wrk's run
        result = side.run(workdir, seconds).wrk
        _, err = spy.communicate(timeout=60)
        if spy.returncode != 0 or not stacks.exists():
            raise RuntimeError(f"py-spy failed ({spy.returncode}): {err.strip()}")
    header = (
        f"scenario {name}: {result.per_second:.1f} req/s, p50 {result.p50_ms:.2f} ms, "
        f"p99 {result.p99_ms:.2f} ms under py-spy ({rate} Hz, {seconds} s, "
        f"{'native' if native else 'Python frames'}); load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {result.requests} requests profiled"
    )
    return stacks, header, result.requests


def _server(name: str, workdir: Path, config: Path, port: int) -> Server:
    """podsync, or for floor_* the floor server on the database podsync seeded."""
    if name.startswith("floor_"):
        return floor_server(workdir, port, "bench-10k")
    return podsync_server(workdir, config, port)


def main() -> None:
    parser = argparse.ArgumentParser(description="profile podsync under load (py-spy + wrk)")
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--native", action="store_true", help="include C frames (SQLite)")
    parser.add_argument("--top", type=int, default=15, help="frames listed per table")
    parser.add_argument("--out", type=Path, help="keep the raw stacks and the summary here")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = parser.parse_args()
    for tool in ("py-spy", "wrk"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not on PATH (pip install py-spy; apt-get install wrk)")
    workdir = Path(tempfile.mkdtemp(prefix="podsync-profile-"))
    try:
        stacks, header, requests = profile(
            args.scenario, args.seconds, args.rate, args.native, parse_sets(args.set), workdir
        )
        text = header + "\n\n" + summarise(stacks, args.rate, requests, args.top)
        print(text)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            shutil.copy(stacks, args.out / stacks.name)
            (args.out / f"{args.scenario}.summary.txt").write_text(text + "\n")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
