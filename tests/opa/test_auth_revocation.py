"""Contract section 3: passwd, disable, delete and logout revoke every token at once."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import closing
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.services.accounts import AccountService
from tests.conftest import PASSWORD, WHOAMI, bearer, login, run_cli, with_accounts

NEW_PASSWORD = "a brand new password"

Operation = Callable[[AccountService], Awaitable[Any]]
OPERATIONS: dict[str, Operation] = {
    "passwd": lambda accounts: accounts.set_password("alice", NEW_PASSWORD),
    "disable": lambda accounts: accounts.set_enabled("alice", False),
    "delete": lambda accounts: accounts.delete_user("alice"),
    "logout": lambda accounts: accounts.logout("alice"),
}


async def _status(client: TestClient[Any, Any], access: str, refresh: str) -> tuple[int, int]:
    whoami = await client.get(WHOAMI, headers=bearer(access))
    refreshed = await client.post("/auth/refresh", json={"refresh_token": refresh})
    return whoami.status, refreshed.status


def _refresh_tokens_of(config: Config, name: str) -> int:
    with closing(sqlite3.connect(config.database.path)) as conn:
        row = conn.execute(
            "SELECT count(*) FROM refresh_tokens t JOIN users u ON u.id = t.user_id "
            "WHERE u.name = ?",
            (name,),
        ).fetchone()
    return int(row[0])


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
async def test_revocation_stops_old_tokens_at_once(
    api: TestClient[Any, Any], config: Config, operation: str
) -> None:
    first, second = await login(api), await login(api)
    assert await _status(api, first["access_token"], first["refresh_token"]) == (200, 200)
    await with_accounts(config, OPERATIONS[operation])
    for tokens in (first, second):
        assert await _status(api, tokens["access_token"], tokens["refresh_token"]) == (401, 401)
    assert _refresh_tokens_of(config, "alice") == 0


async def test_after_passwd_only_the_new_password_logs_in(
    api: TestClient[Any, Any], config: Config
) -> None:
    await with_accounts(config, OPERATIONS["passwd"])
    old = await api.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    assert old.status == 401
    tokens = await login(api, "alice", NEW_PASSWORD)
    assert await _status(api, tokens["access_token"], tokens["refresh_token"]) == (200, 200)


async def test_after_logout_a_new_login_works_and_others_keep_their_tokens(
    api: TestClient[Any, Any], config: Config
) -> None:
    bob = await login(api, "bob")
    await with_accounts(config, OPERATIONS["logout"])
    alice = await login(api, "alice")
    assert await _status(api, alice["access_token"], alice["refresh_token"]) == (200, 200)
    assert await _status(api, bob["access_token"], bob["refresh_token"]) == (200, 200)


async def test_a_deleted_user_id_is_never_reused(api: TestClient[Any, Any], config: Config) -> None:
    old = await login(api, "carol")
    await with_accounts(config, lambda accounts: accounts.delete_user("carol"))
    await with_accounts(config, lambda accounts: accounts.add_user("dave", PASSWORD))
    assert await _status(api, old["access_token"], old["refresh_token"]) == (401, 401)
    with closing(sqlite3.connect(config.database.path)) as conn:
        ids = dict(conn.execute("SELECT name, id FROM users").fetchall())
    assert ids["dave"] > max(v for k, v in ids.items() if k != "dave")
    assert ids["dave"] == 4  # alice 1, bob 2, carol 3 (deleted)


async def test_cli_logout_while_the_app_runs_revokes_at_once(
    api: TestClient[Any, Any], config: Config
) -> None:
    tokens = await login(api)
    # The CLI runs its own event loop: run it in a thread, as a second process would.
    result = await asyncio.to_thread(run_cli, config, "user", "logout", "alice")
    assert result.exit_code == 0, result.output
    assert await _status(api, tokens["access_token"], tokens["refresh_token"]) == (401, 401)
