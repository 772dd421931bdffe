"""Pieces of the benches: servers as subprocesses, wrk runs, API calls, seeding.

Everything here drives real processes over loopback; nothing is mocked. Only
podsync's public surfaces are used (its CLI to seed, its HTTP API to read
cursors), so the benches keep working while the data path behind them changes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

BENCH_DIR = Path(__file__).resolve().parent
WRK_DIR = BENCH_DIR / "wrk"
PASSWORD = "bench password 1234"

# The bench's own settings: fresh DB at durability full, quiet logs, and limits
# lifted that a bench would otherwise hit by design (a login storm past the
# pending-login cap, a 100,000 list past the subscription cap, a token expiring
# mid-run). `--set section.key=value` overrides any of them.
BASE_CONFIG: dict[str, dict[str, Any]] = {
    "server": {"host": "127.0.0.1"},
    "database": {"durability": "full"},
    "auth": {
        "login_max_failures": 1_000_000,
        "max_pending_logins": 1_000,
        "access_token_lifetime": 86_400,
    },
    "sync": {"max_subscriptions_per_user": 10_000_000, "max_entities_per_user": 10_000_000},
    "log": {"level": "warning", "access_log": False},
    # The bench's feeds are not served anywhere: no fetcher reaching for public hosts.
    "feeds": {"fetch_metadata": False},
}

Overrides = dict[str, dict[str, Any]]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def parse_sets(items: list[str]) -> Overrides:
    """`section.key=value` items as nested dicts. The value is read as a TOML value
    (`true`, `3`, `"x"`, `["a"]`) and, when that fails, taken as a bare string, so
    `log.format=json` works without shell-quoted quotes."""
    out: Overrides = {}
    for item in items:
        name, sep, raw = item.partition("=")
        section, dot, key = name.strip().partition(".")
        if not sep or not dot or not section or not key:
            raise ValueError(f"--set wants section.key=value, not {item!r}")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        out.setdefault(section, {})[key] = value
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} as TOML")


def write_podsync_config(workdir: Path, port: int, overrides: Overrides | None = None) -> Path:
    """The bench's TOML: BASE_CONFIG, this run's port and DB, then the overrides."""
    sections: Overrides = {k: dict(v) for k, v in BASE_CONFIG.items()}
    sections["server"]["port"] = port
    sections["database"]["path"] = str(workdir / "podsync.db")
    for section, keys in (overrides or {}).items():
        sections.setdefault(section, {}).update(keys)
    lines: list[str] = []
    for section, keys in sections.items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in keys.items())
        lines.append("")
    path = workdir / "podsync.toml"
    path.write_text("\n".join(lines))
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

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

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
        found: dict[str, int] = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
        return found


def podsync_argv(config: Path) -> list[str]:
    return [sys.executable, "-m", "podsync", "--config", str(config), "serve"]


def podsync_server(workdir: Path, config: Path, port: int) -> Server:
    return Server(podsync_argv(config), port, "/healthz", workdir / "podsync.log")


def bare_server(workdir: Path, port: int) -> Server:
    argv = [sys.executable, str(BENCH_DIR / "bare_server.py"), "--port", str(port)]
    argv += ["--db", str(workdir / "bare.db")]
    return Server(argv, port, "/bare/page", workdir / "bare.log")


def floor_server(workdir: Path, port: int, user: str) -> Server:
    """podsync's store calls for a list page and a poll, on a bare handler, reading the
    bench's podsync database (bench/floor_server.py)."""
    argv = [sys.executable, str(BENCH_DIR / "floor_server.py"), "--port", str(port)]
    argv += ["--db", str(workdir / "podsync.db"), "--user", user]
    return Server(argv, port, "/floor/poll", workdir / "floor.log")


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
    argv = ["wrk", f"-t{min(threads, connections)}", f"-c{connections}"]
    argv += [f"-d{max(1, round(duration))}s", "--timeout", "30s"]
    argv += ["-s", str(_script(script, workdir)), url, "--", *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_wrk(proc: subprocess.Popen[str]) -> WrkResult:
    out, err = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("WRK_RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {err.strip() or out.strip()}")
    raw: dict[str, Any] = json.loads(lines[-1].removeprefix("WRK_RESULT "))
    # wrk counts a status >= 400 as an error; a 304 (a conditional GET) would
    # count as an answer, but wrk's requests carry no If-None-Match.
    if raw["status_errors"] or raw["socket_errors"]:
        raise RuntimeError(
            f"wrk saw {raw['status_errors']} 4xx/5xx answers and "
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
    """One JSON API call; raises on any status but 2xx (urllib sends no If-None-Match,
    so a list that supports ETags still answers 200)."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    url = base + path  # always http://127.0.0.1:<port>/...
    request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        return json.loads(response.read())


def login(base: str, name: str) -> str:
    body = {"username": name, "password": PASSWORD}
    token: str = call(base, "POST", "/auth/login", body)["access_token"]
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


def seed(config: Path, workdir: Path, users: dict[str, int]) -> None:
    """Create each user with the real CLI and give it `n` subscriptions with
    `podsync opml import` (server-made subscribes through the sync rules)."""
    cli = [sys.executable, "-m", "podsync", "--config", str(config)]
    for name, count in users.items():
        add = [*cli, "user", "add", name, "--password-stdin"]
        subprocess.run(add, input=PASSWORD + "\n", text=True, check=True, capture_output=True)
        if count == 0:
            continue
        opml = workdir / f"{name}.opml"
        with opml.open("w") as out:
            out.write('<?xml version="1.0"?>\n<opml version="2.0"><head><title>bench</title>')
            out.write("</head><body>\n")
            for i in range(count):
                url = f"https://seed.example/{name}/{i}/feed.xml"
                out.write(f'<outline type="rss" text="{i}" xmlUrl="{url}"/>\n')
            out.write("</body></opml>\n")
        imp = [*cli, "opml", "import", name, str(opml)]
        subprocess.run(imp, check=True, capture_output=True)
        opml.unlink()


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


@contextlib.contextmanager
def in_tree(source: Path | None) -> Iterator[None]:
    """Start servers from the podsync/ of `source` (this tree when None) inside:
    `python -m podsync` looks in its working directory first, then PYTHONPATH."""
    if source is None:
        yield
        return
    here, path_before = Path.cwd(), os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(source.resolve())
    os.chdir(source)
    try:
        yield
    finally:
        os.chdir(here)
        if path_before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = path_before
