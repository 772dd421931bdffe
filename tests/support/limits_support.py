"""Blocking HTTP calls to a real `podsync serve` for the limit tests (the ticker that
watches the server meanwhile is tests/support/ticker.py)."""

from __future__ import annotations

import base64
import http.client
import json
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
