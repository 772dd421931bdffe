"""The Open Podcast API write of the side-by-side bench, against podsync alone:
server CPU per acknowledged action and the write turn's hold time per request.

    python bench/opa_writes.py                         # 1 and 2 workers, this code
    python bench/opa_writes.py --workers 2 --rounds 6 --code before=DIR --code after=.
    python bench/opa_writes.py --push sub --workers 2 --code before=DIR --code after=.

The request is the peer bench's (`wrk/opa_writes.lua`): POST /api/v1/sync with 30
subscribes to new feeds, random UUIDv4 action ids, one Client-ID, wrk -t2 -c8,
durability "full", per-user limits out of the way; `--push sub` sends the gpodder
subscription push instead (30 new feeds in "add", `wrk/gpodder_subscriptions.lua`),
`--push ep` the gpodder episode push (30 plays, `wrk/episodes.lua`), each with a
gpodder session (CPU "per action" is then per feed or play); `--durability
full,normal` runs a tree per durability (`normal`: no fsync at a COMMIT, the
ceiling of what the COMMIT's fsync costs). Each `--code NAME=DIR` runs a
`podsync serve` tree from the source folder DIR (its `podsync` package first on
PYTHONPATH; "." is this checkout) with `--workers` workers on a fresh database; the
trees are measured in alternating rounds (the order flipped every round), so an
A/B of two versions shares the machine's load. Each round reports:

- CPU ms per action: user + system time of the whole tree (parent, workers, their
  threads) from /proc over the run, over the actions of 2xx answers. wrk counts
  every 4xx/5xx and socket error, and the run stops if there is any: a refused
  request costs little and would flatter the figure.
- actions/s of 2xx answers (throughput: noisy on a shared machine).
- the write turn (`turn_probe.py`): ms held per request (from BEGIN IMMEDIATE to the
  end of the COMMIT, turn given back), the share of the run's wall time it was held
  (summed over workers: near 1.0 means writes queue on it), the time inside the
  write blocks per request and the COMMIT step's per group, requests per COMMIT,
  and the busiest worker's share of the requests (wrk's 8 connections are not
  always split evenly, and a worker that holds more of them groups more).
- the load average (1 minute) when the round started, and the tree's RSS after it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpodder_sides import DEVICE, gpodder_login
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
from turn_probe import read_all
from workers import tree, tree_cpu_s

BENCH_DIR = Path(__file__).resolve().parent
BATCH = 30


def tree_rss_mib(pid: int) -> float:
    """VmRSS summed over the tree after a round (pages shared by workers count twice)."""
    total = 0
    for p in tree(pid):
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return round(total / 1024, 1)


class Tree:
    """One `podsync serve` tree of the code in `source`, metered."""

    def __init__(
        self,
        name: str,
        source: Path,
        workers: int,
        workdir: Path,
        push: str,
        durability: str = "full",
    ) -> None:
        self.name = name
        self.push = push
        self.source = source
        self.dir = workdir / name
        self.dir.mkdir()
        self.turns = self.dir / "turns"
        self.turns.mkdir()
        port = free_port()
        overrides: dict[str, dict[str, Any]] = {
            "server": {"workers": workers},
            "database": {"durability": durability},
            "sync": {
                "max_subscriptions_per_user": 100_000_000,
                "max_entities_per_user": 100_000_000,
            },
        }
        self.config = write_podsync_config(self.dir, port, overrides)
        env = {"PYTHONPATH": str(source), "BENCH_TURN_DIR": str(self.turns)}
        os.environ.update(env)  # seed's CLI and the server run this code
        try:
            seed(self.config, self.dir, {"bench-writer": 0})
            argv = [sys.executable, str(BENCH_DIR / "turn_probe.py"), "--config", str(self.config)]
            self.server = Server([*argv, "serve"], port, "/healthz", self.dir / "podsync.log")
            self.server.__enter__()
        finally:
            for key in env:
                del os.environ[key]
        if push == "opa":
            self.token = login(self.server.base, "bench-writer")
        else:
            self.token = gpodder_login(self.server.base, "bench-writer")
        self.rounds = 0

    def _request(self) -> tuple[str, str, list[str]]:
        """wrk's URL, script and arguments for this round."""
        base = self.server.base
        if self.push == "sub":
            url = f"{base}/api/2/subscriptions/bench-writer/{DEVICE}.json"
            return url, "gpodder_subscriptions.lua", [self.token, nonce(), str(BATCH)]
        if self.push == "ep":
            url = f"{base}/api/2/episodes/bench-writer.json"
            return url, "episodes.lua", [self.token, nonce(), str(BATCH)]
        return base + "/api/v1/sync", "opa_writes.lua", [self.token, f"{self.name}{self.rounds}"]

    def run(self, seconds: float) -> dict[str, float]:
        self.rounds += 1
        load = os.getloadavg()[0]
        cpu0, turn0, t0 = tree_cpu_s(self.server.pid), read_all(self.turns), time.monotonic()
        url, script, args = self._request()
        result = run_wrk(url, script, args, self.dir, seconds)
        wall = time.monotonic() - t0
        cpu, turn = tree_cpu_s(self.server.pid) - cpu0, read_all(self.turns)
        held_ns, commits, blocks, block_ns, commit_ns, restart_ns, restarts = (
            sum(v[k] - turn0.get(pid, (0,) * 7)[k] for pid, v in turn.items()) for k in range(7)
        )
        requests = max(result.requests, 1)
        # How the workers shared the connections (the kernel hands each connection to
        # one worker): a worker with most of them groups more writes per COMMIT.
        per_worker = [v[2] - turn0.get(pid, (0,) * 7)[2] for pid, v in turn.items()]
        return {
            "load": round(load, 2),
            "cpu_ms_per_action": round(1000 * cpu / (requests * BATCH), 4),
            "actions_per_s": round(result.per_second * BATCH),
            "turn_ms_per_request": round(held_ns / 1e6 / requests, 3),
            "turn_share": round(held_ns / 1e9 / wall, 3),
            "in_blocks_ms_per_request": round(block_ns / 1e6 / requests, 3),
            "commit_ms_per_commit": round(commit_ns / 1e6 / max(commits, 1), 3),
            "requests_per_commit": round(requests / max(commits, 1), 2),
            "restart_ms_per_request": round(restart_ns / 1e6 / requests, 3),
            "requests_per_restart": round(requests / max(restarts, 1), 1),
            "write_blocks_per_request": round(blocks / requests, 2),
            "busiest_worker_share": round(max(per_worker, default=0) / max(blocks, 1), 2),
            "p99_ms": round(result.p99_ms, 1),
            "rss_mib": tree_rss_mib(self.server.pid),
        }

    def stop(self) -> None:
        self.server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2", help="comma-separated; one tree per value")
    parser.add_argument("--code", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--push", choices=("opa", "sub", "ep"), default="opa")
    parser.add_argument(
        "--durability", default="full", help="comma-separated (full, normal); a tree per value"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    codes = [c.split("=", 1) for c in args.code] or [["this", str(BENCH_DIR.parent)]]
    for name, src in codes:
        # Without it the installed podsync would run, silently, under the wrong name.
        if not (Path(src) / "podsync" / "__init__.py").is_file():
            sys.exit(f"--code {name}={src}: no podsync package in {src}")
    workers = [int(w) for w in args.workers.split(",")]
    durabilities = args.durability.split(",")
    with quiet_env(), tempfile.TemporaryDirectory(prefix="podsync-opa-writes-") as tmp:
        trees: list[Tree] = []
        try:
            for n in workers:
                for durability in durabilities:
                    suffix = "" if durability == "full" else f"-{durability}"
                    for name, src in codes:  # each stopped below, even if a later one fails
                        source = Path(src).resolve()
                        name_n = f"{name}-w{n}{suffix}"
                        trees.append(Tree(name_n, source, n, Path(tmp), args.push, durability))
            for tree in trees:  # warm-up, not counted
                tree.run(1)
            rows: dict[str, list[dict[str, float]]] = {t.name: [] for t in trees}
            for i in range(args.rounds):
                for tree in trees if i % 2 == 0 else reversed(trees):
                    rows[tree.name].append(tree.run(args.seconds))
        finally:
            for tree in trees:
                tree.stop()
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    keys = list(next(iter(rows.values()))[0])
    print("| tree | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for name, runs in rows.items():
        for r in runs:
            print(f"| {name} | " + " | ".join(str(r[k]) for k in keys) + " |")
        med = [str(round(statistics.median(r[k] for r in runs), 4)) for k in keys]
        print(f"| **{name} median** | " + " | ".join(med) + " |")


if __name__ == "__main__":
    main()
