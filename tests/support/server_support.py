"""A real `podsync serve` in a subprocess on the test's database, and a small
blocking HTTP client for threads that poll it while the CLI works beside it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from podsync.config import Config
from tests.support.cli_support import config_path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def podsync_command(config: Config, *args: str) -> list[str]:
    return [sys.executable, "-m", "podsync", "--config", config_path(config), *args]


@contextmanager
def serving(config: Config, log: Path) -> Iterator[str]:
    """Run the server until the block ends; yields its base URL."""
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            podsync_command(config, "serve", "--port", str(port)), stdout=out, stderr=out
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if request(base + "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def request(
    url: str, body: Any = None, token: str | None = None, timeout: float = 10
) -> tuple[int, Any]:
    """(status, parsed JSON body) of one request; POST when there is a body."""
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers=headers)  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def access_token(base: str, name: str, password: str) -> str:
    status, body = request(base + "/auth/login", {"username": name, "password": password})
    assert status == 200, body
    token: str = body["access_token"]
    return token
