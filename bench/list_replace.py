"""What one simple-API list replace costs, and what it costs everyone else.

    python bench/list_replace.py [--sizes 5000,10000,20000] [--database-url URL]

For each size n, on a real `podsync serve` with a fresh database: user `big` PUTs a
list of n feeds to `/subscriptions/big/phone.json`, then PUTs n different feeds
(every old one removed, every new one added: the worst replace). Meanwhile user
`other` polls `GET /api/2/subscriptions/other/phone.json` back to back on its own
connection. Printed per size: the first PUT and the replace, in seconds, the server's CPU
seconds for the replace (what a loaded machine does not inflate much), and the
slowest and median answer `other` got while the replace ran (what a stalled event
loop shows as). `--database-url` names an empty PostgreSQL database (one schema
per size is made in it).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from harness import PASSWORD, Server, free_port, podsync_argv, quiet_env, write_podsync_config


def _basic(name: str) -> dict[str, str]:
    token = base64.b64encode(f"{name}:{PASSWORD}".encode()).decode()
    return {"Authorization": f"Basic {token}", "Content-Type": "application/json"}


def _put(port: int, name: str, urls: list[str]) -> tuple[int, float, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = json.dumps(urls).encode()
    started = time.perf_counter()
    conn.request("PUT", f"/subscriptions/{name}/phone.json", body, _basic(name))
    response = conn.getresponse()
    text = response.read().decode(errors="replace")
    elapsed = time.perf_counter() - started
    conn.close()
    return response.status, elapsed, text[:300]


class Ticker(threading.Thread):
    """Another user's small request, back to back, on one keep-alive connection."""

    def __init__(self, port: int, name: str) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.name_ = name
        self.latencies: list[float] = []
        self.recording = False
        self.stopping = False
        self.failures = 0
        self.answered = threading.Event()

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        path = f"/api/2/subscriptions/{self.name_}/phone.json"
        while not self.stopping:
            started = time.perf_counter()
            recording = self.recording
            conn.request("GET", path, headers=_basic(self.name_))
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                self.failures += 1
            # A call that began or ended while the replace ran counts (a stalled
            # server answers the one in flight only after the replace).
            if recording or self.recording:
                self.latencies.append(time.perf_counter() - started)
            self.answered.set()
            time.sleep(0.002)
        conn.close()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _schema_url(base_url: str, name: str) -> str:
    import asyncio

    import asyncpg

    async def create() -> None:
        conn = await asyncpg.connect(base_url)
        try:
            await conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
            await conn.execute(f"CREATE SCHEMA {name}")
        finally:
            await conn.close()

    asyncio.run(create())
    separator = "&" if "?" in base_url else "?"
    return f"{base_url}{separator}search_path={name}"


def run_size(n: int, database_url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="podsync-replace-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        overrides: dict[str, dict[str, Any]] = {
            "sync": {"max_subscriptions_per_user": 10_000_000},
            "server": {"max_body_bytes": 64 * 1024 * 1024},
        }
        if database_url:
            overrides["database"] = {"url": _schema_url(database_url, f"bench_replace_{n}")}
        config = write_podsync_config(workdir, port, overrides)
        cli = [sys.executable, "-m", "podsync", "--config", str(config)]
        for name in ("big", "other"):
            subprocess.run(
                [*cli, "user", "add", name, "--password-stdin"],
                input=PASSWORD + "\n",
                text=True,
                check=True,
                capture_output=True,
            )
        first = [f"https://a.example/{i}/feed.xml" for i in range(n)]
        second = [f"https://b.example/{i}/feed.xml" for i in range(n)]
        argv = [*podsync_argv(config), "--port", str(port)]
        with Server(argv, port, "/healthz", workdir / "log") as server:
            status, put_s, text = _put(port, "big", first)
            assert status == 200, text
            ticker = Ticker(port, "other")
            ticker.start()
            ticker.answered.wait(60)  # the first call verifies the password (argon2)
            time.sleep(0.1)
            ticker.recording = True
            cpu = _cpu_seconds(server.pid)
            status, replace_s, text = _put(port, "big", second)
            replace_cpu = _cpu_seconds(server.pid) - cpu
            ticker.recording = False
            ticker.stopping = True
            ticker.join()
            assert status == 200, text
            latencies = ticker.latencies or [0.0]
            return {
                "n": n,
                "put_s": put_s,
                "replace_s": replace_s,
                "replace_cpu_s": replace_cpu,
                "other_max_ms": max(latencies) * 1000,
                "other_median_ms": statistics.median(latencies) * 1000,
                "other_calls": len(ticker.latencies),
                "other_failures": ticker.failures,
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5000,10000,20000")
    parser.add_argument("--database-url", default="")
    args = parser.parse_args()
    engine = "postgresql" if args.database_url else "sqlite"
    print(f"engine: {engine}")
    print(f"load average: {os.getloadavg()[0]:.1f}")
    print(
        f"{'n':>7} {'PUT s':>8} {'replace s':>10} {'server CPU s':>13} "
        f"{'other max ms':>13} {'other p50 ms':>13}"
    )
    with quiet_env():
        for n in (int(s) for s in args.sizes.split(",")):
            r = run_size(n, args.database_url)
            print(
                f"{r['n']:>7} {r['put_s']:>8.2f} {r['replace_s']:>10.2f} "
                f"{r['replace_cpu_s']:>13.2f} "
                f"{r['other_max_ms']:>13.1f} {r['other_median_ms']:>13.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
