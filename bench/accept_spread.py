"""How a burst of connections falls between several workers (`server.workers`).

    python bench/accept_spread.py                  # 30 bursts of 8 from one client
    python bench/accept_spread.py --wrk --trials 20
    python bench/accept_spread.py --workers 4 --connections 16

Starts one `podsync serve` tree (harness.BASE_CONFIG, a fresh database). Each trial
opens `--connections` keep-alive connections at once (one client sending a GET on
each, or, with `--wrk`, wrk with 2 threads for 2 s), then counts each worker's
established connections of the server's port from /proc (the sockets in its file
descriptors), and prints how often each split came up, the busiest worker first:
`8+0` means one worker took them all and the other served none of them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from harness import quiet_env
from workers import start_tree

TCP_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
ESTABLISHED = "01"


def socket_inodes(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            found.add(target[len("socket:[") : -1])
    return found


def established(port: int) -> set[str]:
    """The inodes of the established connections whose local port is `port`."""
    found = set()
    for table in TCP_TABLES:
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == ESTABLISHED and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(fields[9])
    return found


def workers_of(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def split(workers: list[int], port: int) -> tuple[int, ...]:
    now = established(port)
    return tuple(sorted((len(socket_inodes(w) & now) for w in workers), reverse=True))


def client_burst(port: int, count: int, workers: list[int]) -> tuple[int, ...]:
    conns = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(count)]
    try:
        for conn in conns:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: podsync\r\n\r\n")
        for conn in conns:
            conn.recv(4096)
        return split(workers, port)
    finally:
        for conn in conns:
            conn.close()


def wrk_burst(base: str, port: int, count: int, workers: list[int]) -> tuple[int, ...]:
    argv = ["wrk", "-t2", f"-c{count}", "-d2s", base + "/healthz"]
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL) as run:
        time.sleep(1)
        found = split(workers, port)
        run.wait()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--wrk", action="store_true", help="wrk opens the connections")
    args = parser.parse_args()
    if args.wrk and shutil.which("wrk") is None:
        sys.exit("wrk is not installed")
    load = os.getloadavg()
    with quiet_env(), tempfile.TemporaryDirectory(prefix="podsync-accept-bench-") as tmp:
        server, _ = start_tree(Path(tmp), args.workers)
        try:
            time.sleep(1)
            workers = workers_of(server.pid)
            port = int(server.base.rsplit(":", 1)[1])
            splits: Counter[tuple[int, ...]] = Counter()
            for _ in range(args.trials):
                if args.wrk:
                    splits[wrk_burst(server.base, port, args.connections, workers)] += 1
                else:
                    splits[client_burst(port, args.connections, workers)] += 1
                time.sleep(0.3)  # the connections closed on both sides
        finally:
            server.stop()
    who = "wrk" if args.wrk else "one client"
    print(f"{args.connections} connections from {who}, {args.workers} workers, ", end="")
    print(f"{args.trials} trials (load average {load[0]:.2f} at the start)")
    for shares, times in sorted(splits.items(), reverse=True):
        print(f"  {'+'.join(map(str, shares))}: {times}")


if __name__ == "__main__":
    main()
