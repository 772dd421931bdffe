"""Contract section 3: access tokens, refresh tokens and the secret key that signs them."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from itsdangerous import URLSafeTimedSerializer

from podsync import timestamps
from podsync.config import Config
from podsync.services.auth import ACCESS_SALT, SECRET_META_KEY
from tests.conftest import WHOAMI, MakeConfig, app_with_test_routes, bearer, login, raw_http


async def _whoami(client: TestClient[Any, Any], token: str) -> int:
    response = await client.get(WHOAMI, headers=bearer(token))
    if response.status == 401:
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await response.json())["error"] == "Unauthorized"
    return response.status


def _stored_secret(config: Config) -> str | None:
    with closing(sqlite3.connect(config.database.path)) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (SECRET_META_KEY,)).fetchone()
    return None if row is None else str(row[0])


async def test_access_token_authorizes_its_user(api: TestClient[Any, Any]) -> None:
    token = (await login(api, "bob"))["access_token"]
    response = await api.get(WHOAMI, headers=bearer(token))
    assert response.status == 200
    assert await response.json() == {"name": "bob"}


async def test_tokens_expire_after_their_configured_lifetimes(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any
) -> None:
    config = make_config(auth={"access_token_lifetime": 1, "refresh_token_lifetime": 1})
    client = await aiohttp_client(app_with_test_routes(config))
    before = time.time()
    tokens = await login(client)
    after = time.time()
    assert tokens["expires_in"] == 1
    assert await _whoami(client, tokens["access_token"]) == 200
    refreshed = await client.post("/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert refreshed.status == 200
    assert (await refreshed.json())["expires_in"] == 1
    # Valid for at least the lifetime and less than a second more (itsdangerous
    # counts whole seconds): alive until issued + 1 s, dead at issued + 2 s.
    await asyncio.sleep(before + 0.8 - time.time())
    assert await _whoami(client, tokens["access_token"]) == 200
    await asyncio.sleep(after + 2.05 - time.time())
    assert await _whoami(client, tokens["access_token"]) == 401
    expired = await client.post("/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert expired.status == 401
    assert expired.headers["WWW-Authenticate"].startswith("Bearer")


async def test_refresh_token_stays_valid_after_use(api: TestClient[Any, Any]) -> None:
    tokens = await login(api)
    for _ in range(3):
        response = await api.post("/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
        assert response.status == 200
        body = await response.json()
        assert set(body) == {"access_token", "expires_in"}
        assert body["expires_in"] == 3600
        assert await _whoami(api, body["access_token"]) == 200


@pytest.mark.parametrize(
    "refresh_token", ["unknown", "x" * 43, "\\u0000\\u0001", "\\ud800", "é" * 10]
)
async def test_unknown_refresh_token_is_401(api: TestClient[Any, Any], refresh_token: str) -> None:
    response = await api.post(
        "/auth/refresh",
        data=f'{{"refresh_token": "{refresh_token}"}}'.encode("utf-8", "surrogatepass"),
        headers={"Content-Type": "application/json"},
    )
    assert response.status == 401, await response.text()
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "body",
    [
        "{}",
        '{"refresh_token": ""}',
        '{"refresh_token": null}',
        '{"refresh_token": 42}',
        '{"refresh_token": ["x"]}',
        '["x"]',
        '"x"',
        "null",
        "",
        "{",
    ],
)
async def test_refresh_body_without_a_non_empty_string_token_is_400(
    api: TestClient[Any, Any], body: str
) -> None:
    response = await api.post(
        "/auth/refresh", data=body, headers={"Content-Type": "application/json"}
    )
    assert response.status == 400
    assert (await response.json())["error"] == "Bad request"


async def test_tampered_tokens_are_refused(api: TestClient[Any, Any]) -> None:
    token = (await login(api))["access_token"]
    payload, timestamp, signature = token.split(".")
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    assert await _whoami(api, f"{payload}.{timestamp}.{flipped}") == 401
    # bob's payload with alice's signature
    bob = (await login(api, "bob"))["access_token"]
    assert await _whoami(api, f"{bob.split('.')[0]}.{timestamp}.{signature}") == 401
    assert await _whoami(api, token[:-1]) == 401
    assert await _whoami(api, token + "x") == 401
    assert await _whoami(api, "not-a-token") == 401


async def test_tokens_signed_with_another_key_or_purpose_are_refused(
    api: TestClient[Any, Any], config: Config
) -> None:
    own = (await login(api))["access_token"]
    alice_id = URLSafeTimedSerializer(_stored_secret(config) or "", salt=ACCESS_SALT).loads(own)
    # A token of the same user, made by another podsync server with its own secret key.
    foreign = URLSafeTimedSerializer("another server's secret key", salt=ACCESS_SALT)
    assert await _whoami(api, foreign.dumps(alice_id)) == 401
    # The right key but another purpose (salt).
    other_purpose = URLSafeTimedSerializer(_stored_secret(config) or "", salt="password-reset")
    assert await _whoami(api, other_purpose.dumps(alice_id)) == 401


@pytest.mark.parametrize("payload", [[1, 0], {"u": "1", "g": 0}, {"u": True, "g": 0}, {"u": 1}, 7])
async def test_validly_signed_token_with_a_strange_payload_is_refused(
    api: TestClient[Any, Any], config: Config, payload: Any
) -> None:
    forged = URLSafeTimedSerializer(_stored_secret(config) or "", salt=ACCESS_SALT)
    assert await _whoami(api, forged.dumps(payload)) == 401


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic YWxpY2U6cGFzc3dvcmQ=", "Token abc", "bearer"],
)
async def test_missing_or_non_bearer_authorization_is_401(
    api: TestClient[Any, Any], header: str | None
) -> None:
    headers = {} if header is None else {"Authorization": header}
    response = await api.get(WHOAMI, headers=headers)
    assert response.status == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert (await response.json())["error"] == "Unauthorized"


async def test_bearer_scheme_is_case_insensitive(api: TestClient[Any, Any]) -> None:
    token = (await login(api))["access_token"]
    response = await api.get(WHOAMI, headers={"Authorization": f"bearer {token}"})
    assert response.status == 200


async def test_token_in_query_string_is_ignored(api: TestClient[Any, Any]) -> None:
    token = (await login(api))["access_token"]
    for name in ("access_token", "token", "Authorization", "bearer"):
        response = await api.get(WHOAMI, params={name: token})
        assert response.status == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_authorization_header_that_is_not_utf8_is_401_not_500(
    api: TestClient[Any, Any],
) -> None:
    request = (
        f"GET {WHOAMI} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".encode()
        + b"Authorization: Bearer \xff\xfe.\xc3\r\n\r\n"
    )
    answer = await raw_http(api.port, request)
    assert answer.startswith(b"HTTP/1.1 401 "), answer
    assert b"WWW-Authenticate: Bearer" in answer


async def test_secret_key_is_generated_once_and_kept_in_the_database(
    aiohttp_client: Any, config: Config, seeded_users: Any
) -> None:
    assert _stored_secret(config) is None
    first = await aiohttp_client(app_with_test_routes(config))
    token = (await login(first))["access_token"]
    secret = _stored_secret(config)
    assert secret is not None
    assert len(secret) >= 32
    await first.close()
    # A restart on the same database keeps the key, so issued tokens still work.
    second = await aiohttp_client(app_with_test_routes(config))
    assert await _whoami(second, token) == 200
    assert _stored_secret(config) == secret


async def test_configured_secret_key_is_used_instead(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any
) -> None:
    generated = await aiohttp_client(app_with_test_routes(make_config()))
    old_token = (await login(generated))["access_token"]
    await generated.close()
    config = make_config(auth={"secret_key": "a configured secret key"})
    client = await aiohttp_client(app_with_test_routes(config))
    token = (await login(client))["access_token"]
    signer = URLSafeTimedSerializer("a configured secret key", salt=ACCESS_SALT)
    assert signer.loads(token)["u"] >= 1
    assert await _whoami(client, token) == 200
    # Tokens signed with the generated key no longer verify.
    assert await _whoami(client, old_token) == 401


async def test_refresh_tokens_are_stored_only_as_hashes_with_their_expiry(
    api: TestClient[Any, Any], config: Config
) -> None:
    tokens = await login(api)
    expires = timestamps.parse(tokens["refresh_expires"])
    with closing(sqlite3.connect(config.database.path)) as conn:
        rows = conn.execute("SELECT token_hash, expires_at FROM refresh_tokens").fetchall()
    assert rows == [(hashlib.sha256(tokens["refresh_token"].encode()).digest(), expires)]
    await api.close()  # checkpoint the WAL into the file, then look at every byte
    raw = await asyncio.to_thread(Path(config.database.path).read_bytes)
    assert hashlib.sha256(tokens["refresh_token"].encode()).digest() in raw
    assert tokens["refresh_token"].encode() not in raw
    assert tokens["access_token"].encode() not in raw
