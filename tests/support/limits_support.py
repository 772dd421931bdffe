"""Blocking HTTP calls to a real `podsync serve` for the limit tests, and a ticker:
another user's small request sent back to back on its own connection, whose slowest
answer shows how long the server's event loop was held."""

from __future__ import annotations

import base64
import http.client
import json
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from tests.conftest import PASSWORD


def basic(name: str) -> dict[str, str]:
    token = base64.b64encode(f"{name}:{PASSWORD}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def call(
    base: str,
    method: str,
    path: str,
    name: str = "alice",
    body: Any = None,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 600,
) -> tuple[int, Any]:
    """(status, parsed JSON or text) of one call with Basic credentials of `name`."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    try:
        conn.request(method, path, data, {**basic(name), **(headers or {})})
        response = conn.getresponse()
        text = response.read().decode("utf-8", errors="replace")
    finally:
        conn.close()
    try:
        return response.status, json.loads(text) if text.strip() else None
    except ValueError:
        return response.status, text


def feeds(prefix: str, count: int) -> list[str]:
    return [f"https://{prefix}.example/{i}/feed.xml" for i in range(count)]


def subscribed(base: str, name: str = "alice") -> list[str]:
    status, urls = call(base, "GET", f"/subscriptions/{name}/phone.json", name)
    assert status == 200, urls
    return sorted(urls)


class Ticker(threading.Thread):
    """`GET path` as `name`, back to back, on one keep-alive connection. `latencies`
    are those of calls that began or ended inside `window()` (a call a stalled server
    held counts in full)."""

    def __init__(self, base: str, name: str, path: str) -> None:
        super().__init__(daemon=True)
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "", parts.port
        self.name_, self.path = name, path
        self.latencies: list[float] = []
        self.baseline = 0.0  # the slowest answer with nothing else running
        self.failures: list[int] = []
        self.recording = False
        self.stopping = threading.Event()
        self.answered = threading.Event()  # set once the first call is answered

    def run(self) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        try:
            while not self.stopping.is_set():
                began = self.recording
                started = time.perf_counter()
                conn.request("GET", self.path, headers=basic(self.name_))
                response = conn.getresponse()
                response.read()
                elapsed = time.perf_counter() - started
                if response.status != 200:
                    self.failures.append(response.status)
                if began or self.recording:
                    self.latencies.append(elapsed)
                self.answered.set()
                time.sleep(0.005)
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=600)

    def worst(self) -> float:
        return max(self.latencies, default=0.0)
