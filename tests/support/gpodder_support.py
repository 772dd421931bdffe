"""Helpers of the gpodder layer's tests: Basic headers and the URLs of the API."""

from __future__ import annotations

import base64
import http.client
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from aiohttp.test_utils import TestClient

from tests.conftest import PASSWORD

GpWith = Callable[..., Awaitable[TestClient[Any, Any]]]


def basic(name: str = "alice", password: str = PASSWORD, charset: str = "utf-8") -> dict[str, str]:
    token = base64.b64encode(f"{name}:{password}".encode(charset)).decode("ascii")
    return {"Authorization": f"Basic {token}"}


async def login_cookie(gp: TestClient[Any, Any], name: str = "alice") -> str:
    """Log in like AntennaPod and return the session cookie's value."""
    response = await gp.post(f"/api/2/auth/{name}/login.json", headers=basic(name))
    assert response.status == 200, await response.text()
    return response.cookies["sessionid"].value


def cookie(value: str) -> dict[str, str]:
    return {"Cookie": f"sessionid={value}"}


class Answer:
    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)


def call(base: str, method: str, path: str, body: bytes | None = None, **headers: str) -> Answer:
    """One request to a real server exactly as given (http.client adds only Host,
    Accept-Encoding and Content-Length)."""
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()
