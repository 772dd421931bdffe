"""Pieces of the load bench: servers as subprocesses, wrk runs, API calls, seeding.

Everything here drives real processes over loopback; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from podsync.config import load_config
from podsync.db import Database
from podsync.services.accounts import AccountService
from podsync.services.passwords import PasswordService
from podsync.services.sync import Action, SyncService

BENCH_DIR = Path(__file__).resolve().parent
WRK_DIR = BENCH_DIR / "wrk"
PASSWORD = "bench password 1234"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_podsync_config(workdir: Path, port: int) -> Path:
    """The bench's server config: fresh DB, durability full, quiet logs, no lockout."""
    path = workdir / "podsync.toml"
    path.write_text(
        f'[server]\nhost = "127.0.0.1"\nport = {port}\n\n'
        f'[database]\npath = "{workdir / "podsync.db"}"\ndurability = "full"\n\n'
        "[auth]\nlogin_max_failures = 1000000\n\n"
        '[log]\nlevel = "warning"\naccess_log = false\n'
    )
    return path


class Server:
    """A server subprocess on a loopback port, stopped with SIGTERM (SIGKILL if stuck)."""

    def __init__(self, argv: list[str], port: int, health_path: str, log_path: Path) -> None:
        self.argv = argv
        self.base = f"http://127.0.0.1:{port}"
        self.health_path = health_path
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Server:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.argv} exited; see {self.log_path}")
            url = self.base + self.health_path
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1):  # noqa: S310
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.argv} did not answer within 30 s")

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def memory_kib(self) -> dict[str, int]:
        """VmRSS (now) and VmHWM (peak) of the server process, in KiB."""
        assert self.proc is not None
        found: dict[str, int] = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
        return found


def podsync_server(workdir: Path, port: int) -> Server:
    config = write_podsync_config(workdir, port)
    argv = [sys.executable, "-m", "podsync", "--config", str(config), "serve"]
    return Server(argv, port, "/healthz", workdir / "podsync.log")


def bare_server(workdir: Path, port: int) -> Server:
    argv = [
        sys.executable,
        str(BENCH_DIR / "bare_server.py"),
        "--port",
        str(port),
        "--db",
        str(workdir / "bare.db"),
    ]
    return Server(argv, port, "/bare/page", workdir / "bare.log")


@dataclass(frozen=True)
class WrkResult:
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds


def _script(name: str, workdir: Path) -> Path:
    """wrk runs one script: the scenario's, followed by the shared reporter."""
    combined = workdir / f"wrk-{name}"
    combined.write_text((WRK_DIR / name).read_text() + (WRK_DIR / "report.lua").read_text())
    return combined


def start_wrk(
    url: str,
    script: str,
    args: list[str],
    workdir: Path,
    duration: float,
    connections: int = 8,
    threads: int = 2,
) -> subprocess.Popen[str]:
    argv = [
        "wrk",
        f"-t{min(threads, connections)}",
        f"-c{connections}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "30s",
        "-s",
        str(_script(script, workdir)),
        url,
        "--",
        *args,
    ]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_wrk(proc: subprocess.Popen[str]) -> WrkResult:
    out, err = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("WRK_RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {err.strip() or out.strip()}")
    raw: dict[str, Any] = json.loads(lines[-1].removeprefix("WRK_RESULT "))
    if raw["status_errors"] or raw["socket_errors"]:
        raise RuntimeError(
            f"wrk saw {raw['status_errors']} non-2xx answers and "
            f"{raw['socket_errors']} socket errors: the server is failing, not slow"
        )
    return WrkResult(
        requests=raw["requests"],
        seconds=raw["duration_us"] / 1e6,
        p50_ms=raw["p50_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
    )


def run_wrk(url: str, script: str, args: list[str], workdir: Path, duration: float) -> WrkResult:
    return finish_wrk(start_wrk(url, script, args, workdir, duration))


def call(base: str, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    """One JSON API call; raises on any status but 200."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    url = base + path  # always http://127.0.0.1:<port>/...
    request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        return json.loads(response.read())


def login(base: str, name: str) -> str:
    token: str = call(base, "POST", "/auth/login", {"username": name, "password": PASSWORD})[
        "access_token"
    ]
    return token


def with_limit(path: str, limit: int) -> str:
    """The same relative URL with its `limit` query parameter replaced."""
    parts = urlsplit(path)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "limit"] + [("limit", str(limit))]
    return f"{parts.path}?{urlencode(query)}"


def last_page_path(base: str, token: str, first: str, cursor_key: str) -> str:
    """Follow the cursors of `first` (a path with limit=500) to the last page; return
    the path of that last page (its cursor lies within 500 entities of the end)."""
    path = first
    while True:
        page = call(base, "GET", path, token=token)
        if not page["has_next"]:
            return path
        path = page[cursor_key]


def feed_head_path(base: str, token: str) -> str:
    """The change feed's next_since after reading it all: what a client polls with."""
    path = "/api/v1/sync?limit=500"
    while True:
        page = call(base, "GET", path, token=token)
        path = page["next_since"]
        if not page["has_next"]:
            return str(path)


def seed(config_path: Path, users: dict[str, int], batch: int = 2000) -> None:
    """Create the users and give each `n` subscriptions through the sync service's
    rules (batches of server-made subscribes, as an OPML import does)."""

    async def main() -> None:
        config = load_config(config_path, environ={})
        async with Database(config.database.path, config.database.durability) as db:
            passwords = PasswordService()
            try:
                accounts = AccountService(db, passwords)
                sync = SyncService(db, config.sync)
                for name, count in users.items():
                    user = await accounts.add_user(name, PASSWORD)
                    for start in range(0, count, batch):
                        actions = [
                            Action(
                                index=i,
                                action_id=None,
                                type="subscription",
                                action="subscribe",
                                occurred_at="2026-01-01T00:00:00Z",
                                data={"feed_url": f"https://seed.example/{name}/{start + i}"},
                            )
                            for i in range(min(batch, count - start))
                        ]
                        await sync.apply_batch(user.id, actions, None)
            finally:
                passwords.close()

    asyncio.run(main())


def nonce() -> str:
    return str(uuid.uuid4().int % 0xFFFFFFFF)


@contextlib.contextmanager
def quiet_env() -> Iterator[None]:
    """Keep PODSYNC_* variables of the caller's shell out of the bench servers."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("PODSYNC_")}
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)
