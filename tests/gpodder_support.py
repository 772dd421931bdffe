"""Helpers of the gpodder layer's tests: Basic headers and the URLs of the API."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from typing import Any

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
