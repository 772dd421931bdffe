"""Shared fixtures: a real app on a real SQLite file in a temp dir.

`make_config(section={...})` builds a validated Config whose database lives in the
test's tmp_path; `client` runs create_app(config) under aiohttp's test client;
`create_user` and `login` go through the real services and the real API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config, load_config
from podsync.db import Database
from podsync.services.accounts import AccountService
from podsync.services.passwords import PasswordService
from podsync.web.app import create_app

PASSWORD = "correct horse battery"

MakeConfig = Callable[..., Config]


@pytest.fixture
def make_config(tmp_path: Path) -> MakeConfig:
    def make(**sections: dict[str, Any]) -> Config:
        lines = [f'[database]\npath = "{tmp_path / "podsync.db"}"\n']
        for section, values in sections.items():
            body = "".join(f"{key} = {_toml(value)}\n" for key, value in values.items())
            if section == "database":
                lines[0] += body
            else:
                lines.append(f"[{section}]\n{body}")
        path = tmp_path / "podsync.toml"
        path.write_text("\n".join(lines))
        return load_config(path, environ={})

    return make


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.fixture
def config(make_config: MakeConfig) -> Config:
    return make_config()


@pytest.fixture
async def client(aiohttp_client: Any, config: Config) -> TestClient[Any, Any]:
    result: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    return result


async def with_accounts(config: Config, action: Callable[[AccountService], Awaitable[Any]]) -> Any:
    """Run an account operation on the test database, as the CLI would."""
    async with Database(config.database.path, config.database.durability) as db:
        passwords = PasswordService()
        try:
            return await action(AccountService(db, passwords))
        finally:
            passwords.close()


@pytest.fixture
def create_user(config: Config) -> Callable[..., Awaitable[Any]]:
    async def create(name: str = "alice", password: str = PASSWORD) -> Any:
        return await with_accounts(config, lambda accounts: accounts.add_user(name, password))

    return create


async def login(
    client: TestClient[Any, Any], name: str = "alice", password: str = PASSWORD
) -> dict[str, Any]:
    response = await client.post("/auth/login", json={"username": name, "password": password})
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    return body


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def alice(client: TestClient[Any, Any], create_user: Callable[..., Awaitable[Any]]) -> str:
    """An existing user `alice`, logged in: her access token."""
    await create_user("alice")
    token: str = (await login(client, "alice"))["access_token"]
    return token
