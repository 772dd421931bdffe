"""Contract section 3: login, refresh, bearer tokens."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import PASSWORD, bearer, login


async def test_login_returns_both_tokens_and_expiry(
    client: TestClient[Any, Any], create_user: Any
) -> None:
    await create_user("alice")
    body = await login(client, "alice")
    assert set(body) == {
        "access_token",
        "expires_in",
        "refresh_token",
        "refresh_expires",
        "refresh_endpoint",
    }
    assert body["expires_in"] == 3600
    assert body["refresh_endpoint"] == "/auth/refresh"
    assert body["refresh_expires"].endswith("Z")


async def test_refresh_gives_a_working_access_token(
    client: TestClient[Any, Any], create_user: Any
) -> None:
    await create_user("alice")
    tokens = await login(client, "alice", PASSWORD)
    response = await client.post("/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert response.status == 200
    body = await response.json()
    assert set(body) == {"access_token", "expires_in"}
    health = await client.get("/healthz", headers=bearer(body["access_token"]))
    assert health.status == 200
