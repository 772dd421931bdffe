"""Time the gpodder layer's hot paths on a real `podsync serve` over loopback.

    python bench/gpodder.py [--rounds 200] [--seconds 5]

Prints, for one client calling sequentially over one keep-alive connection:
- a 30-action episode upload (AntennaPod's batch size), each batch new;
- a subscriptions pull of a 1,000-feed account from since=0 (a first sync);
- Basic-authenticated calls per second (GET devices, as Kasts sends Basic on every
  call) with the verification cache on (basic_cache_seconds = 300) and off (0),
  and with an app password as the Basic password (cache off: it needs none);
- the 1,000-feed first upload itself (one POST, AntennaPod's first sync).
Each server gets a fresh database in a temp dir and is stopped at the end.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

PASSWORD = "bench password 1234"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"bench:{PASSWORD}".encode()).decode()}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Podsync:
    """`podsync serve` on a fresh database with one user, `bench`."""

    def __init__(self, workdir: Path, cache_seconds: int) -> None:
        self.port = free_port()
        self.config = workdir / f"podsync-{cache_seconds}.toml"
        self.config.write_text(
            f'[server]\nhost = "127.0.0.1"\nport = {self.port}\n\n'
            f'[database]\npath = "{workdir / f"podsync-{cache_seconds}.db"}"\n\n'
            f"[gpodder]\nbasic_cache_seconds = {cache_seconds}\n\n"
            '[log]\nlevel = "warning"\naccess_log = false\n'
            "[feeds]\nfetch_metadata = false\n"  # its feeds are not served anywhere
        )
        self.log = workdir / f"podsync-{cache_seconds}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "podsync", "--config", str(self.config), *args]

    def __enter__(self) -> Podsync:
        subprocess.run(
            self.command("user", "add", "bench", "--password-stdin"),
            input=PASSWORD.encode(),
            check=True,
            capture_output=True,
        )
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.command("serve"), stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                url = f"http://127.0.0.1:{self.port}/healthz"
                with urllib.request.urlopen(url, timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"podsync did not start; see {self.log}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)


def basic_header(password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"bench:{password}".encode()).decode()}


def call(
    conn: http.client.HTTPConnection,
    method: str,
    path: str,
    body: object = None,
    headers: dict[str, str] = AUTH,
) -> bytes:
    data = None if body is None else json.dumps(body).encode()
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    payload = response.read()
    if response.status != 200:
        raise RuntimeError(f"{method} {path}: {response.status} {payload[:200]!r}")
    return payload


def timed(rounds: int, step: Callable[[int], object]) -> list[float]:
    """Milliseconds of each of `rounds` calls of step(i)."""
    times = []
    for i in range(rounds):
        start = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - start) * 1000)
    return times


def line(name: str, times: list[float]) -> str:
    p99 = statistics.quantiles(times, n=100)[98] if len(times) >= 2 else times[0]
    return f"| {name} | {len(times)} | {statistics.median(times):.2f} | {p99:.2f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    rows = ["| path | calls | median ms | p99 ms |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp, Podsync(Path(tmp), 300) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        feeds = [f"https://feeds.example.org/show/{i}/rss" for i in range(1000)]
        rows.append(
            line(
                "first upload of 1,000 feeds (POST subscriptions)",
                timed(
                    1,
                    lambda _: call(
                        conn, "POST", "/api/2/subscriptions/bench/phone.json", {"add": feeds}
                    ),
                ),
            )
        )

        def upload(i: int) -> None:
            actions = [
                {
                    "podcast": feeds[n],
                    "episode": f"https://feeds.example.org/show/{n}/ep{i}.mp3",
                    "action": "play",
                    "timestamp": "2026-11-22T10:00:00",
                    "started": 0,
                    "position": 60 + i,
                    "total": 3600,
                    "device": "phone",
                }
                for n in range(30)
            ]
            call(conn, "POST", "/api/2/episodes/bench.json", actions)

        rows.append(line("episode upload, 30 actions", timed(args.rounds, upload)))
        pull = "/api/2/subscriptions/bench/phone.json?since=0"
        rows.append(
            line(
                "subscriptions pull, 1,000 feeds, since=0",
                timed(args.rounds, lambda _: call(conn, "GET", pull)),
            )
        )
        rows.append(
            line(
                "episode pull since=0 (page of 1,000)",
                timed(
                    max(1, args.rounds // 10),
                    lambda _: call(conn, "GET", "/api/2/episodes/bench.json?since=0"),
                ),
            )
        )
        assert server.proc is not None
        basic, basic_cpu = per_second(conn, args.seconds, pid=server.proc.pid)
        conn.close()
    with tempfile.TemporaryDirectory() as tmp, Podsync(Path(tmp), 0) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        assert server.proc is not None
        uncached, uncached_cpu = per_second(conn, min(args.seconds, 3.0), pid=server.proc.pid)
        made = subprocess.run(
            server.command("user", "app-passwords", "bench", "--create", "bench"),
            check=True,
            capture_output=True,
            text=True,
        )
        app_password, app_cpu = per_second(
            conn, args.seconds, basic_header(made.stdout.strip()), server.proc.pid
        )
        conn.close()
    print("\n".join(rows))
    print()
    print("| Basic-auth GET devices, one client | calls/s | server CPU µs per call |")
    print("|---|---|---|")
    print(f"| verification cache on (300 s) | {basic:.0f} | {basic_cpu:.0f} |")
    print(
        f"| verification cache off (0 s): one argon2id per call | {uncached:.1f} "
        f"| {uncached_cpu:.0f} |"
    )
    print(f"| an app password (no cache, no argon2id) | {app_password:.0f} | {app_cpu:.0f} |")


def per_second(
    conn: http.client.HTTPConnection,
    seconds: float,
    headers: dict[str, str] = AUTH,
    pid: int | None = None,
) -> tuple[float, float]:
    """(calls per second, the server's CPU microseconds per call; 0 without `pid`)."""
    call(conn, "GET", "/api/2/devices/bench.json", headers=headers)  # warm the cache
    cpu_before = cpu_seconds(pid)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        call(conn, "GET", "/api/2/devices/bench.json", headers=headers)
        count += 1
    rate = count / (time.perf_counter() - start)
    return rate, (cpu_seconds(pid) - cpu_before) / count * 1e6


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process `pid` and its threads (Linux /proc)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return ticks / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
