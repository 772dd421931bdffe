"""argon2id's cost as a setting: `auth.password_hash_memory_kib` and
`auth.password_hash_time_cost`, refused below OWASP's minimum, used by every new
hash, rehashed to at the Open Podcast API's login, spent on unknown users too."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import argon2
import pytest
from aiohttp.test_utils import TestClient
from click.testing import CliRunner

from podsync.cli import cli
from podsync.config import AuthConfig, Config, ConfigError, load_config
from podsync.services import passwords as passwords_module
from podsync.services.passwords import DUMMY_HASH, PasswordService
from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig, login, with_accounts
from tests.support.cli_support import add_user

MEMORY, TIME = "auth.password_hash_memory_kib", "auth.password_hash_time_cost"


def _toml(tmp_path: Path, memory_kib: int, time_cost: int) -> Path:
    path = tmp_path / "podsync.toml"
    path.write_text(
        f'[database]\npath = "{tmp_path / "podsync.db"}"\n'
        f"[auth]\npassword_hash_memory_kib = {memory_kib}\n"
        f"password_hash_time_cost = {time_cost}\n"
    )
    return path


# (memory_kib, time_cost, the setting named, a bound the message names)
REFUSED = [
    (7167, 5, MEMORY, "7168"),
    (4194305, 1, MEMORY, "4194304"),
    (65536, 0, TIME, "between 1 and 20"),
    (65536, 21, TIME, "between 1 and 20"),
    (7168, 4, f"{MEMORY} * {TIME}", "35840"),
    (19456, 1, f"{MEMORY} * {TIME}", "35840"),
]


@pytest.mark.parametrize(("memory_kib", "time_cost", "key", "bound"), REFUSED)
def test_a_cost_out_of_range_is_refused_naming_the_setting(
    tmp_path: Path, memory_kib: int, time_cost: int, key: str, bound: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_toml(tmp_path, memory_kib, time_cost), environ={})
    assert f"{key} must be" in str(caught.value)
    assert bound in str(caught.value)


@pytest.mark.parametrize(
    ("memory_kib", "time_cost"), [(7168, 5), (19456, 2), (47104, 1), (65536, 3), (4194304, 20)]
)
def test_owasp_lines_and_the_bounds_are_accepted(
    tmp_path: Path, memory_kib: int, time_cost: int
) -> None:
    auth = load_config(_toml(tmp_path, memory_kib, time_cost), environ={}).auth
    assert (auth.password_hash_memory_kib, auth.password_hash_time_cost) == (memory_kib, time_cost)


def test_the_defaults_are_argon2_cffis() -> None:
    auth = AuthConfig()
    hasher = argon2.PasswordHasher()
    assert (auth.password_hash_memory_kib, auth.password_hash_time_cost) == (
        hasher.memory_cost,
        hasher.time_cost,
    )


def test_the_environment_sets_the_cost(tmp_path: Path) -> None:
    path = tmp_path / "podsync.toml"
    path.write_text(f'[database]\npath = "{tmp_path / "podsync.db"}"\n')
    env = {
        "PODSYNC_AUTH_PASSWORD_HASH_MEMORY_KIB": "19456",
        "PODSYNC_AUTH_PASSWORD_HASH_TIME_COST": "2",
    }
    auth = load_config(path, environ=env).auth
    assert (auth.password_hash_memory_kib, auth.password_hash_time_cost) == (19456, 2)


def test_config_check_refuses_a_cost_below_the_minimum(tmp_path: Path) -> None:
    path = _toml(tmp_path, 4096, 20)
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "check"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: configuration: {MEMORY} must be between 7168")
    result = CliRunner().invoke(
        cli,
        ["--config", str(_toml(tmp_path, 65536, 3)), "config", "check"],
        env={"PODSYNC_AUTH_PASSWORD_HASH_TIME_COST": "0"},
    )
    assert result.exit_code == 1
    assert f"{TIME} must be between 1 and 20" in result.stderr


def test_serve_refuses_to_start_with_a_cost_below_the_minimum(tmp_path: Path) -> None:
    path = _toml(tmp_path, 7168, 4)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
    done = subprocess.run(
        [sys.executable, "-m", "podsync", "--config", str(path), "serve", "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert f"{MEMORY} * {TIME} must be at least 35840" in done.stderr
    assert not (tmp_path / "podsync.db").exists()


async def test_a_hash_carries_its_configured_cost_and_verifies() -> None:
    passwords = PasswordService(memory_kib=19456, time_cost=2)
    try:
        stored = await passwords.hash(PASSWORD)
        assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=4$")
        assert await passwords.verify(stored, PASSWORD)
        assert not await passwords.verify(stored, PASSWORD + "x")
        assert not passwords.needs_rehash(stored)
        # argon2-cffi reads it as its own
        assert argon2.PasswordHasher(time_cost=2, memory_cost=19456).verify(stored, PASSWORD)
    finally:
        passwords.close()
    default = PasswordService()
    try:
        assert default.needs_rehash(stored)
    finally:
        default.close()


def test_user_add_stores_the_configured_cost(config: Config) -> None:
    add_user(config)  # the real CLI, reading the file make_config wrote
    user = asyncio.run(with_accounts(config, lambda accounts: accounts.get_user("alice")))
    auth = config.auth
    cost = f"$m={auth.password_hash_memory_kib},t={auth.password_hash_time_cost},p=4$"
    assert cost in user.password_hash
    assert (auth.password_hash_memory_kib, auth.password_hash_time_cost) == (7168, 5)


async def test_a_changed_cost_rehashes_at_the_next_api_login(
    aiohttp_client: Any, make_config: MakeConfig, create_user: Callable[..., Any]
) -> None:
    await create_user("alice")
    before = make_config()
    user = await with_accounts(before, lambda accounts: accounts.get_user("alice"))
    assert "$m=7168,t=5,p=4$" in user.password_hash

    after = make_config(auth={"password_hash_memory_kib": 19456, "password_hash_time_cost": 2})
    client: TestClient[Any, Any] = await aiohttp_client(create_app(after))
    await login(client)
    user = await with_accounts(after, lambda accounts: accounts.get_user("alice"))
    assert user.password_hash.startswith("$argon2id$v=19$m=19456,t=2,p=4$")
    await login(client)  # the new hash holds the same password
    response = await client.post("/auth/login", json={"username": "alice", "password": "wrong!!!!"})
    assert response.status == 401


def _count_argon2(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """(time cost, memory KiB, lanes) of every argon2 computation from now on."""
    calls: list[tuple[int, int, int]] = []
    real = passwords_module._argon2id

    def counting(password: bytes, salt: bytes, t: int, m: int, lanes: int, length: int) -> bytes:
        calls.append((t, m, lanes))
        return real(password, salt, t, m, lanes, length)

    monkeypatch.setattr(passwords_module, "_argon2id", counting)
    return calls


@pytest.mark.parametrize(("memory_kib", "time_cost"), [(7168, 5), (19456, 2), (65536, 3)])
async def test_an_unknown_user_costs_one_verification_of_the_configured_cost(
    aiohttp_client: Any,
    make_config: MakeConfig,
    create_user: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    memory_kib: int,
    time_cost: int,
) -> None:
    config = make_config(
        auth={"password_hash_memory_kib": memory_kib, "password_hash_time_cost": time_cost}
    )
    client: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    calls = _count_argon2(monkeypatch)
    for name in ("nobody", "nobody-else", "nobody"):
        body = {"username": name, "password": f"guess of {name}"}
        response = await client.post("/auth/login", json=body)
        assert response.status == 401
    assert calls == [(time_cost, memory_kib, 4)] * 3


async def test_the_default_cost_keeps_its_constant_dummy_hash() -> None:
    passwords = PasswordService()
    try:
        assert passwords._dummy == DUMMY_HASH
    finally:
        passwords.close()
    cheap = PasswordService(memory_kib=7168, time_cost=5)
    try:
        assert cheap._dummy is None
        assert not await cheap.verify(None, PASSWORD)
        assert cheap._dummy is not None
        made = cheap._dummy
        assert argon2.extract_parameters(made).memory_cost == 7168
        assert not await cheap.verify(None, PASSWORD)
        assert cheap._dummy == made  # made once, kept
    finally:
        cheap.close()
