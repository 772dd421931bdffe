"""Contract section 3, brute force: login throttling per username and client address."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import PASSWORD, MakeConfig, app_with_test_routes

WRONG = "not the password"


def wrong(n: int) -> str:
    """The n-th of several different wrong passwords: the lockout counts different
    ones (the same one again, a device with an old password, counts once)."""
    return f"{WRONG} {n}"


async def _login(
    client: TestClient[Any, Any], name: str, password: str, forwarded_for: str | None = None
) -> int:
    headers = {} if forwarded_for is None else {"X-Forwarded-For": forwarded_for}
    response = await client.post(
        "/auth/login", json={"username": name, "password": password}, headers=headers
    )
    if response.status == 429:
        body = await response.json()
        assert body["error"] == "Too many requests"
        assert response.content_type == "application/json"
        assert 1 <= int(response.headers["Retry-After"]) <= 900
    return response.status


async def _client(aiohttp_client: Any, make_config: MakeConfig, **auth: Any) -> Any:
    server = auth.pop("server", {})
    config = make_config(auth={"login_max_failures": 2, **auth}, server=server)
    return await aiohttp_client(app_with_test_routes(config))


async def test_lockout_after_max_failures_even_with_the_right_password(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any
) -> None:
    client = await _client(aiohttp_client, make_config)
    assert await _login(client, "alice", wrong(1)) == 401
    assert await _login(client, "alice", wrong(2)) == 401
    assert await _login(client, "alice", PASSWORD) == 429
    response = await client.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    assert response.status == 429
    assert 895 <= int(response.headers["Retry-After"]) <= 900
    assert "X-Request-ID" in response.headers
    # Another username from the same address is not affected, nor an unknown one.
    assert await _login(client, "bob", PASSWORD) == 200
    assert await _login(client, "nobody", WRONG) == 401


async def test_unknown_usernames_are_throttled_too(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any
) -> None:
    client = await _client(aiohttp_client, make_config)
    assert [await _login(client, "nobody", wrong(n)) for n in range(3)] == [401, 401, 429]


async def test_successful_logins_never_count(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any
) -> None:
    client = await _client(aiohttp_client, make_config)
    assert [await _login(client, "alice", PASSWORD) for _ in range(3)] == [200, 200, 200]
    assert await _login(client, "alice", WRONG) == 401
    assert await _login(client, "alice", PASSWORD) == 200


async def test_window_slides_over_failures_only(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any
) -> None:
    # A 6 s window with B 3 s after A: after A leaves, B stays in the window for 3 s
    # more, room for the three logins that follow on a loaded machine (each is an
    # argon2 verification: 0.1 s idle, a second or more under load).
    client = await _client(aiohttp_client, make_config, login_lockout_seconds=6)
    assert await _login(client, "alice", wrong(1)) == 401  # failure A
    a_recorded = time.monotonic()  # A was recorded before this
    await asyncio.sleep(3)
    assert await _login(client, "alice", wrong(2)) == 401  # failure B, >= 3 s after A
    # Refused attempts while locked do not count (nor move the window).
    assert [await _login(client, "alice", PASSWORD) for _ in range(3)] == [429, 429, 429]
    await asyncio.sleep(a_recorded + 6.05 - time.monotonic())
    # A left the window: one failure remains, so the right password works...
    assert await _login(client, "alice", PASSWORD) == 200
    # ...and the window slides: B and a new failure C lock the pair again at once.
    assert await _login(client, "alice", wrong(3)) == 401
    assert await _login(client, "alice", PASSWORD) == 429


async def test_x_forwarded_for_is_believed_only_from_trusted_proxies(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any
) -> None:
    # The test client connects from 127.0.0.1, which is a trusted proxy here.
    client = await _client(aiohttp_client, make_config, server={"trusted_proxies": ["127.0.0.1"]})
    for n in range(2):
        assert await _login(client, "alice", wrong(n), forwarded_for="203.0.113.5") == 401
    assert await _login(client, "alice", PASSWORD, forwarded_for="203.0.113.5") == 429
    # The rightmost untrusted hop is the client: a forged left part does not escape.
    assert await _login(client, "alice", PASSWORD, forwarded_for="1.2.3.4, 203.0.113.5") == 429
    # Another client behind the same proxy, and the proxy itself, are not locked out.
    assert await _login(client, "alice", PASSWORD, forwarded_for="203.0.113.6") == 200
    assert await _login(client, "alice", PASSWORD) == 200


async def test_x_forwarded_for_from_an_untrusted_peer_is_ignored(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any
) -> None:
    client = await _client(aiohttp_client, make_config, server={"trusted_proxies": ["10.0.0.0/8"]})
    assert await _login(client, "alice", wrong(1), forwarded_for="203.0.113.5") == 401
    assert await _login(client, "alice", wrong(2), forwarded_for="203.0.113.6") == 401
    # Both failures counted against 127.0.0.1, whatever the header claimed.
    assert await _login(client, "alice", PASSWORD, forwarded_for="203.0.113.7") == 429
