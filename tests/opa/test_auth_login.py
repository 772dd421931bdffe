"""Contract section 3: login (body rules, identical failures, argon2id storage)."""

from __future__ import annotations

from typing import Any

import argon2
import pytest
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.config import Config
from podsync.services.passwords import DUMMY_HASH
from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig, bearer, login, with_accounts

pytestmark = pytest.mark.both_engines


async def test_login_returns_both_tokens_and_expiry(api: TestClient[Any, Any]) -> None:
    before = timestamps.now_us()
    body = await login(api, "alice")
    assert set(body) == {
        "access_token",
        "expires_in",
        "refresh_token",
        "refresh_expires",
        "refresh_endpoint",
    }
    assert body["expires_in"] == 3600
    assert body["refresh_endpoint"] == "/auth/refresh"
    expires = timestamps.parse(body["refresh_expires"])
    assert body["refresh_expires"].endswith("Z")
    month = 2592000 * 1_000_000
    assert before + month <= expires <= timestamps.now_us() + month


async def test_refresh_gives_a_working_access_token(api: TestClient[Any, Any]) -> None:
    tokens = await login(api, "alice", PASSWORD)
    response = await api.post("/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert response.status == 200
    body = await response.json()
    assert set(body) == {"access_token", "expires_in"}
    whoami = await api.get("/api/test/whoami", headers=bearer(body["access_token"]))
    assert whoami.status == 200
    assert await whoami.json() == {"name": "alice"}


async def test_refresh_token_is_long_and_random(api: TestClient[Any, Any]) -> None:
    first, second = await login(api), await login(api)
    assert first["refresh_token"] != second["refresh_token"]
    # token_urlsafe(32): 256 bits in 43 base64url characters
    assert len(first["refresh_token"]) >= 43


async def test_stored_password_is_an_argon2id_hash(config: Config, seeded_users: Any) -> None:
    user = await with_accounts(config, lambda accounts: accounts.get_user("alice"))
    assert user.password_hash.startswith("$argon2id$")
    assert PASSWORD not in user.password_hash


def test_dummy_hash_costs_what_a_real_verification_costs() -> None:
    hasher = argon2.PasswordHasher()
    assert argon2.extract_parameters(DUMMY_HASH) == argon2.Parameters(
        type=hasher.type,
        version=argon2.low_level.ARGON2_VERSION,
        salt_len=hasher.salt_len,
        hash_len=hasher.hash_len,
        time_cost=hasher.time_cost,
        memory_cost=hasher.memory_cost,
        parallelism=hasher.parallelism,
    )


async def _failure(client: TestClient[Any, Any], username: str, password: str) -> Any:
    response = await client.post("/auth/login", json={"username": username, "password": password})
    assert response.status == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.content_type == "application/json"
    return await response.json()


async def test_wrong_password_unknown_and_disabled_user_answer_alike(
    config: Config, api: TestClient[Any, Any]
) -> None:
    await with_accounts(config, lambda accounts: accounts.set_enabled("bob", False))
    wrong_password = await _failure(api, "alice", "not the password")
    unknown_user = await _failure(api, "nobody", PASSWORD)
    disabled_user = await _failure(api, "bob", PASSWORD)
    assert wrong_password == unknown_user == disabled_user
    assert wrong_password["error"] == "Unauthorized"


async def test_enabled_again_user_can_log_in(config: Config, api: TestClient[Any, Any]) -> None:
    await with_accounts(config, lambda accounts: accounts.set_enabled("bob", False))
    await _failure(api, "bob", PASSWORD)
    await with_accounts(config, lambda accounts: accounts.set_enabled("bob", True))
    assert "access_token" in await login(api, "bob")


async def test_usernames_are_case_sensitive(api: TestClient[Any, Any]) -> None:
    await _failure(api, "Alice", PASSWORD)


@pytest.mark.parametrize(
    "body",
    [
        {"password": PASSWORD},
        {"username": "alice"},
        {"username": "", "password": PASSWORD},
        {"username": "alice", "password": ""},
        {"username": None, "password": PASSWORD},
        {"username": "alice", "password": 12345678},
        {"username": ["alice"], "password": PASSWORD},
        {"username": "alice", "password": {"x": 1}},
        {"username": True, "password": PASSWORD},
    ],
)
async def test_login_body_without_two_non_empty_strings_is_400(
    client: TestClient[Any, Any], body: dict[str, Any]
) -> None:
    response = await client.post("/auth/login", json=body)
    assert response.status == 400
    error = await response.json()
    assert error["error"] == "Bad request"
    assert "must be a non-empty string" in error["description"]


@pytest.mark.parametrize("body", ["[]", '"alice"', "null", "42", "[{}]"])
async def test_login_body_that_is_not_an_object_is_400(
    client: TestClient[Any, Any], body: str
) -> None:
    response = await client.post(
        "/auth/login", data=body, headers={"Content-Type": "application/json"}
    )
    assert response.status == 400
    assert "must be a JSON object" in (await response.json())["description"]


@pytest.mark.parametrize(
    ("username", "password"),
    [
        ("\\ud800alice", PASSWORD),
        ("alice", "\\udfffpassword"),
        ("\\udc00", "\\ud83d"),
    ],
)
async def test_lone_surrogates_in_credentials_are_a_401_not_a_500(
    api: TestClient[Any, Any], username: str, password: str
) -> None:
    raw = f'{{"username": "{username}", "password": "{password}"}}'
    response = await api.post("/auth/login", data=raw, headers={"Content-Type": "application/json"})
    assert response.status == 401, await response.text()
    assert (await response.json())["error"] == "Unauthorized"


async def test_user_whose_password_has_a_lone_surrogate_can_log_in(
    config: Config, api: TestClient[Any, Any]
) -> None:
    await with_accounts(config, lambda accounts: accounts.set_password("alice", "pass\ud800word"))
    raw = '{"username": "alice", "password": "pass\\ud800word"}'
    response = await api.post("/auth/login", data=raw, headers={"Content-Type": "application/json"})
    assert response.status == 200


@pytest.mark.parametrize(
    ("public_url", "endpoint"),
    [
        ("https://pods.example.org", "https://pods.example.org/auth/refresh"),
        ("https://pods.example.org/", "https://pods.example.org/auth/refresh"),
        ("https://example.org/podsync/", "https://example.org/podsync/auth/refresh"),
    ],
)
async def test_refresh_endpoint_is_absolute_from_public_url(
    aiohttp_client: Any,
    make_config: MakeConfig,
    seeded_users: Any,
    public_url: str,
    endpoint: str,
) -> None:
    config = make_config(server={"public_url": public_url})
    client = await aiohttp_client(create_app(config))
    assert (await login(client))["refresh_endpoint"] == endpoint
