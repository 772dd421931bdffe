"""Profile podsync under one bench scenario with py-spy (pip install py-spy).

    python bench/profile.py sync          # POST batches of 30 subscribes
    python bench/profile.py list          # GET a page of 50 of a 10,000 list
    python bench/profile.py feed          # poll the change feed at its head

The server runs under `py-spy record` (sampling, all threads, idle samples left
out) while wrk drives it as in bench/load.py; py-spy writes a collapsed-stack
file, and this prints the functions that hold most samples, self and total.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from harness import (
    Server,
    feed_head_path,
    free_port,
    login,
    nonce,
    quiet_env,
    run_wrk,
    seed,
    write_podsync_config,
)

SCENARIOS = ("sync", "list", "feed")


class ProfiledServer(Server):
    """py-spy writes its file when the profiled server exits, not when py-spy is
    signalled: stop the server (py-spy's child) first, then wait for py-spy."""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
            for pid in children.split():
                os.kill(int(pid), signal.SIGTERM)
            self.proc.wait(timeout=30)


def top(collapsed: Path, count: int, main_only: bool) -> None:
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in collapsed.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if main_only and "_run_module_as_main" not in stack:
            continue  # a worker thread (aiosqlite, argon2), not the event loop
        frames = stack.split(";")[1:]  # the first frame names the thread
        weight = int(n)
        samples += weight
        if frames:
            own[frames[-1]] += weight
        for frame in set(frames):
            total[frame] += weight
    print(f"{samples} samples\n\nself:")
    for frame, n in own.most_common(count):
        print(f"{100 * n / samples:6.1f}%  {frame}")
    print("\ntotal (inclusive):")
    for frame, n in total.most_common(count):
        print(f"{100 * n / samples:6.1f}%  {frame}")


def main() -> None:
    parser = argparse.ArgumentParser(description="profile podsync under load (py-spy)")
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", type=Path, help="keep the collapsed stacks here")
    parser.add_argument("--main-only", action="store_true", help="only the event loop's thread")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="podsync-profile-"))
    collapsed = args.out or workdir / "stacks.txt"
    try:
        port = free_port()
        config = write_podsync_config(workdir, port)
        seed(config, {"bench-sync": 0, "bench-10k": 10_000})
        argv = [
            "py-spy", "record", "--format", "raw", "--rate", "200", "--threads", "--nonblocking",
            "--output", str(collapsed), "--",
            sys.executable, "-m", "podsync", "--config", str(config), "serve",
        ]  # fmt: skip
        with quiet_env(), ProfiledServer(argv, port, "/healthz", workdir / "podsync.log") as server:
            base = server.base
            if args.scenario == "sync":
                token = login(base, "bench-sync")
                url, script, wrk_args = base + "/api/v1/sync", "sync.lua", [token, nonce(), "30"]
            elif args.scenario == "list":
                token = login(base, "bench-10k")
                url, script, wrk_args = base + "/api/v1/subscriptions?limit=50", "get.lua", [token]
            else:
                token = login(base, "bench-10k")
                url, script, wrk_args = base + feed_head_path(base, token), "get.lua", [token]
            result = run_wrk(url, script, wrk_args, workdir, args.duration)
            print(f"{result.per_second:.1f} req/s, p99 {result.p99_ms:.1f} ms (under py-spy)")
        top(collapsed, args.top, args.main_only)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
