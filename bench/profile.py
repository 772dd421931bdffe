"""Profile podsync under one load-bench scenario with py-spy; print where the time goes.

    python bench/profile.py list            # GET a page of 50 of a 10,000 list
    python bench/profile.py feed            # poll the change feed at its head
    python bench/profile.py sync            # POST batches of 30 fresh subscribes
    python bench/profile.py sync --native --seconds 15 --out /tmp/sync-prof

The server (`python -m podsync serve`, the same temp TOML and seeding as
bench/load.py, `--set` works alike) runs under `py-spy record --format raw` (all
threads; py-spy's idle filter misses threads parked on a lock, so summary.py sets
those apart) while wrk drives the scenario as bench/load.py
does. The collapsed stacks are then summarised (summary.py): CPU per request by
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
import signal
import sys
import tempfile
from pathlib import Path

from harness import (
    Overrides,
    Server,
    call,
    feed_head_path,
    free_port,
    login,
    parse_sets,
    podsync_argv,
    quiet_env,
    seed,
    write_podsync_config,
)
from rounds import Side, get_side, sync_side
from summary import summarise

SCENARIOS = ("list", "feed", "sync")
LIST_PATH = "/api/v1/subscriptions?limit=50"


class ProfiledServer(Server):
    """py-spy writes its file when the profiled server exits, not when py-spy is
    signalled: stop the server (py-spy's child) first, then wait for py-spy."""

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text()
        for pid in children.split():
            os.kill(int(pid), signal.SIGTERM)
        self.proc.wait(timeout=60)

    def server_pid(self) -> int:
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        return int(children[0])


def scenario_side(name: str, base: str, pid: int) -> Side:
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
    """Run the scenario under py-spy; return the raw stacks' path, a header, the requests."""
    port = free_port()
    config = write_podsync_config(workdir, port, overrides)
    seed(config, workdir, {"bench-sync": 0} if name == "sync" else {"bench-10k": 10_000})
    stacks = workdir / f"{name}.stacks.txt"
    argv = ["py-spy", "record", "--format", "raw", "--rate", str(rate), "--threads"]
    argv += ["--native"] if native else []
    argv += ["--output", str(stacks), "--", *podsync_argv(config)]
    profiled = ProfiledServer(argv, port, "/healthz", workdir / "podsync.log")
    with quiet_env(), profiled as server:
        side = scenario_side(name, server.base, profiled.server_pid())
        side.run(workdir, 1)  # warm-up, inside the profile (a small share of it)
        result = side.run(workdir, seconds).wrk
        requests = result.requests + round(result.per_second)  # with the warm-up's, roughly
    header = (
        f"scenario {name}: {result.per_second:.1f} req/s, p50 {result.p50_ms:.2f} ms, "
        f"p99 {result.p99_ms:.2f} ms under py-spy ({rate} Hz, {seconds} s + 1 s warm-up, "
        f"{'native' if native else 'Python frames'}); load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; ~{requests} requests profiled"
    )
    return stacks, header, requests


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
