"""Time `podsync opml import` of a large OPML file into a fresh database, and show
that a server running on the same database keeps answering meanwhile.

    python bench/opml_import.py [--feeds 5000]

Creates a user with the real CLI, starts `podsync serve` on the same database,
polls GET /healthz, an authenticated GET /api/v1/subscriptions and a one-action
POST /api/v1/sync (a write) in a loop while `podsync opml import` (a subprocess,
the real CLI) runs, then prints the import's wall time and the latency (median,
p99, max) and failure count of the polls while idle, during the first import and
during a second one that changes nothing. Everything runs on 127.0.0.1 in a temp dir.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PASSWORD = "benchmark-password"


def podsync(config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "podsync", "--config", str(config), *args]


def write_opml(path: Path, feeds: int) -> None:
    outlines = "\n".join(
        f'    <outline type="rss" text="Podcast {i} &amp; friends" title="Podcast {i}"'
        f' xmlUrl="https://feeds{i}.example.org/podcast/rss?id={i}&amp;fmt=mp3"/>'
        for i in range(feeds)
    )
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0">\n'
        f"  <head><title>bench</title></head>\n  <body>\n{outlines}\n  </body>\n</opml>\n"
    )


def call(url: str, token: str | None = None, body: Any = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers)  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def one_subscribe() -> dict[str, Any]:
    return {
        "requests": [
            {
                "action_id": str(uuid.uuid4()),
                "type": "subscription",
                "action": "subscribe",
                "occurred_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
                "data": {"feed_url": f"https://writer.example.org/{uuid.uuid4()}"},
            }
        ]
    }


class Poller(threading.Thread):
    """Alternates GET /healthz, an authenticated list and a one-action sync batch
    (a write, which waits for the import's transaction); latency per request kind."""

    def __init__(self, base: str, token: str) -> None:
        super().__init__(daemon=True)
        self.base, self.token = base, token
        self.stop = threading.Event()
        self.latencies: dict[str, list[float]] = {
            "GET /healthz": [],
            "GET /api/v1/subscriptions": [],
            "POST /api/v1/sync": [],
        }
        self.failures = 0

    def run(self) -> None:
        while not self.stop.is_set():
            for kind in self.latencies:
                method, path = kind.split(" ")
                token = self.token if "api" in path else None
                body = one_subscribe() if method == "POST" else None
                started = time.perf_counter()
                try:
                    status, _ = call(self.base + path, token, body)
                except OSError:
                    status = 0
                self.latencies[kind].append(time.perf_counter() - started)
                if status != 200:
                    self.failures += 1


def poll_for(base: str, token: str, action: Any) -> tuple[Poller, Any]:
    poller = Poller(base, token)
    poller.start()
    try:
        result = action()
    finally:
        poller.stop.set()
        poller.join()
    return poller, result


def report(label: str, poller: Poller) -> None:
    for path, values in poller.latencies.items():
        if not values:
            print(f"  {label:<7} {path:<26} no requests")
            continue
        ms = sorted(v * 1000 for v in values)
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        print(
            f"  {label:<7} {path:<26} {len(ms):5d} requests  median {statistics.median(ms):6.1f}"
            f" ms  p99 {p99:6.1f} ms  max {ms[-1]:6.1f} ms"
        )
    print(f"  {label:<7} failures: {poller.failures}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--feeds", type=int, default=5000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = folder / "podsync.toml"
        config.write_text(
            f'[database]\npath = "{folder / "podsync.db"}"\n[log]\nlevel = "warning"\n'
            "[feeds]\nfetch_metadata = false\n"  # its feeds are not served anywhere
        )
        opml = folder / "big.opml"
        write_opml(opml, args.feeds)
        subprocess.run(
            podsync(config, "user", "add", "bench", "--password-stdin"),
            input=PASSWORD + "\n",
            text=True,
            check=True,
            capture_output=True,
        )
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = subprocess.Popen(
            podsync(config, "serve", "--port", str(port)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if call(base + "/healthz")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.05)
            status, body = call(
                base + "/auth/login", body={"username": "bench", "password": PASSWORD}
            )
            assert status == 200, body
            token = body["access_token"]

            idle, _ = poll_for(base, token, lambda: time.sleep(2))

            def run_import() -> tuple[float, str]:
                started = time.perf_counter()
                done = subprocess.run(
                    podsync(config, "opml", "import", "bench", str(opml)),
                    capture_output=True,
                    text=True,
                    check=True,
                )
                return time.perf_counter() - started, done.stdout

            busy, (seconds, output) = poll_for(base, token, run_import)
            again, (seconds_again, output_again) = poll_for(base, token, run_import)
        finally:
            server.terminate()
            server.wait()

        size_kib = opml.stat().st_size / 1024
        print(f"OPML import of {args.feeds} feeds ({size_kib:.0f} KiB) into a fresh database")
        print(f"  first import : {seconds:.2f} s wall (whole CLI process)")
        print("    " + output.strip().replace("\n", "\n    "))
        print(f"  second import: {seconds_again:.2f} s wall (nothing to change)")
        print("    " + output_again.strip().replace("\n", "\n    "))
        print("server latency on the same database:")
        report("idle", idle)
        report("import", busy)
        report("again", again)


if __name__ == "__main__":
    main()
