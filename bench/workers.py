"""One process against several (`server.workers`): throughput, CPU and memory.

    python bench/workers.py                      # 1 against 2 workers, ~3 minutes
    python bench/workers.py --workers 4 --only sync,sub_push --rounds 5
    python bench/workers.py --json

Two `podsync serve` trees run side by side on fresh databases with the same
settings (harness.BASE_CONFIG), one with `server.workers = 1` and one with
`--workers`; each scenario runs them in alternating rounds (wrk, 2 threads, 8
connections, the order flipped every round) and reports the median of the
requests a second, their ratio, the p99 and the CPU time per request of the whole
tree (parent and workers). Scenarios (`--only`):

  sync      POST /api/v1/sync, 30 new subscribes a request (durability full)
  sub_push  POST /api/2/subscriptions/U/D.json, 30 new feeds a request
  ep_push   POST /api/2/episodes/U.json, 30 plays a request
  list      GET a page of 50 of a 10,000-subscription list
  poll      GET the change feed at its head (nothing new)

And the memory of each tree when idle (after start-up, before any request):
RSS and PSS (a forked worker shares pages with the parent and its siblings, which
RSS counts once per process and PSS splits between them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpodder_sides import ep_push_side, gpodder_login, sub_push_side
from harness import (
    Server,
    feed_head_path,
    free_port,
    login,
    podsync_argv,
    quiet_env,
    run_wrk,
    seed,
    write_podsync_config,
)
from rounds import BATCH, Side, median, sync_side

SCENARIOS = ("sync", "sub_push", "ep_push", "list", "poll")
LIST_PATH = "/api/v1/subscriptions?limit=50"


def tree(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid] + [p for c in children for p in tree(int(c))]


def tree_cpu_s(pid: int) -> float:
    """CPU time (user + system) of `pid` and its children now alive."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
        except FileNotFoundError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def tree_memory_mib(pid: int) -> dict[str, Any]:
    """RSS and PSS of each process of the tree, and their sums, in MiB."""
    rows = []
    for p in tree(pid):
        found = {}
        for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("Rss", "Pss"):
                found[key.lower()] = round(int(value.split()[0]) / 1024, 1)
        rows.append({"pid": p, **found})
    return {
        "processes": rows,
        "rss_mib": round(sum(r["rss"] for r in rows), 1),
        "pss_mib": round(sum(r["pss"] for r in rows), 1),
    }


class TreeSide:
    """A side whose CPU is the whole process tree's (parent and workers)."""

    def __init__(self, side: Side) -> None:
        self.side = side

    def run(self, workdir: Path, seconds: float) -> dict[str, float]:
        before = tree_cpu_s(self.side.pid)
        result = run_wrk(self.side.url, self.side.script, self.side.args(), workdir, seconds)
        cpu = tree_cpu_s(self.side.pid) - before
        return {
            "per_second": round(result.per_second, 1),
            "p99_ms": round(result.p99_ms, 2),
            "cpu_ms": round(1000 * cpu / max(result.requests, 1), 4),
        }


def start_tree(workdir: Path, workers: int) -> tuple[Server, Path]:
    directory = workdir / f"workers-{workers}"
    directory.mkdir()
    port = free_port()
    limits = {
        "sync": {"max_subscriptions_per_user": 100_000_000, "max_entities_per_user": 100_000_000}
    }
    limits["gpodder"] = {"max_episode_actions_per_user": 100_000_000}
    limits["server"] = {"workers": workers}
    config = write_podsync_config(directory, port, limits)
    seed(config, directory, {"bench-10k": 10_000, "bench-sync": 0, "bench-gp": 0})
    server = Server(podsync_argv(config), port, "/healthz", directory / "podsync.log")
    return server.__enter__(), directory


def sides(server: Server, only: set[str]) -> dict[str, Side]:
    base, pid = server.base, server.pid
    found: dict[str, Side] = {}
    if "sync" in only:
        found["sync"] = sync_side(pid, base + "/api/v1/sync", login(base, "bench-sync"))
    if only & {"sub_push", "ep_push"}:
        session = gpodder_login(base, "bench-gp")
        if "sub_push" in only:
            found["sub_push"] = sub_push_side(pid, base, "bench-gp", session)
        if "ep_push" in only:
            found["ep_push"] = ep_push_side(pid, base, "bench-gp", session)
    if only & {"list", "poll"}:
        token = login(base, "bench-10k")
        if "list" in only:
            found["list"] = Side(base + LIST_PATH, "get.lua", lambda: [token], pid)
        if "poll" in only:
            head = feed_head_path(base, token)
            found["poll"] = Side(base + head, "get.lua", lambda: [token], pid)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=",".join(SCENARIOS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    only = set(args.only.split(","))
    load = [os.getloadavg()]
    with quiet_env(), tempfile.TemporaryDirectory(prefix="podsync-workers-bench-") as tmp:
        workdir = Path(tmp)
        one, _ = start_tree(workdir, 1)
        many, _ = start_tree(workdir, args.workers)
        try:
            time.sleep(1)
            memory = {"1": tree_memory_mib(one.pid), str(args.workers): tree_memory_mib(many.pid)}
            side_one, side_many = sides(one, only), sides(many, only)
            results: dict[str, Any] = {}
            for name in SCENARIOS:
                if name not in only:
                    continue
                a, b = TreeSide(side_one[name]), TreeSide(side_many[name])
                a.run(workdir, 1)
                b.run(workdir, 1)
                pairs = []
                for i in range(args.rounds):
                    first, second = (a, b) if i % 2 == 0 else (b, a)
                    r1 = first.run(workdir, args.seconds)
                    r2 = second.run(workdir, args.seconds)
                    pairs.append((r1, r2) if first is a else (r2, r1))
                results[name] = summary(pairs)
        finally:
            one.stop()
            many.stop()
    load.append(os.getloadavg())
    report = {
        "workers": args.workers,
        "load_average": [[round(x, 2) for x in la] for la in load],
        "memory": memory,
        "scenarios": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print_table(report)


def summary(pairs: list[tuple[dict[str, float], dict[str, float]]]) -> dict[str, Any]:
    ratios = [b["per_second"] / max(a["per_second"], 1e-9) for a, b in pairs]
    return {
        "ratio": median(ratios, 2),
        "ratios": [round(r, 2) for r in ratios],
        "one": {k: median([a[k] for a, _ in pairs]) for k in pairs[0][0]},
        "many": {k: median([b[k] for _, b in pairs]) for k in pairs[0][1]},
    }


def print_table(report: dict[str, Any]) -> None:
    n = report["workers"]
    start, end = report["load_average"]
    print(f"load average: {start} at the start, {end} at the end")
    for key, mem in report["memory"].items():
        each = ", ".join(f"{p['rss']}/{p['pss']}" for p in mem["processes"])
        print(
            f"idle, workers = {key}: RSS {mem['rss_mib']} MiB, PSS {mem['pss_mib']} MiB "
            f"(per process RSS/PSS: {each})"
        )
    print()
    print(
        f"| scenario | 1 process req/s | {n} workers req/s | ratio (rounds) "
        f"| p99 ms 1 / {n} | CPU ms/req 1 / {n} |"
    )
    print("|---|---:|---:|---|---|---|")
    for name, row in report["scenarios"].items():
        one, many = row["one"], row["many"]
        scale = BATCH if name in ("sync", "sub_push", "ep_push") else 1
        unit = " (x30 actions)" if scale > 1 else ""
        print(
            f"| {name}{unit} | {one['per_second']:,.0f} | {many['per_second']:,.0f} | "
            f"{row['ratio']} ({', '.join(map(str, row['ratios']))}) | "
            f"{one['p99_ms']} / {many['p99_ms']} | {one['cpu_ms']} / {many['cpu_ms']} |"
        )


if __name__ == "__main__":
    sys.exit(main())
