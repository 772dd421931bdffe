"""Contract section 9, `podsync user`: the rules test_cli_users.py leaves out (every
invalid name, passwd keeping the old password on error, list after disable and enable)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from click.testing import Result

from podsync import timestamps
from podsync.config import Config
from podsync.services.passwords import PasswordService
from tests.conftest import PASSWORD, run_cli, with_accounts

pytestmark = pytest.mark.both_engines

NEW_PASSWORD = "another long password"


def _assert_clean(result: Result, *secrets: str) -> None:
    for secret in (PASSWORD, NEW_PASSWORD, *secrets):
        assert secret not in result.output
        assert secret not in result.stderr


def _error(result: Result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr == f"Error: {message}\n"
    assert result.stdout == ""
    _assert_clean(result)


def _users(config: Config) -> list[list[str]]:
    result = run_cli(config, "user", "list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    if lines[0].startswith("no users yet"):
        return []
    assert lines[0] == "NAME\tSTATE\tSUBSCRIPTIONS\tCREATED\tDEVICES\tADMIN"
    return [line.split("\t") for line in lines[1:]]


def _password_matches(config: Config, name: str, password: str) -> bool:
    async def check() -> bool:
        user = await with_accounts(config, lambda accounts: accounts.get_user(name))
        passwords = PasswordService.for_config(config.auth)
        try:
            return await passwords.verify(user.password_hash, password)
        finally:
            passwords.close()

    return asyncio.run(check())


def test_user_add_reads_one_line_from_stdin(config: Config) -> None:
    before = timestamps.now_us()
    result = run_cli(config, "user", "add", "alice", "--password-stdin", input=PASSWORD + "\r\n")
    assert result.exit_code == 0
    assert result.stdout == "user alice created\n"
    _assert_clean(result)
    assert _password_matches(config, "alice", PASSWORD)
    [(name, state, subscriptions, created, devices, admin)] = _users(config)
    assert (name, state, subscriptions, devices, admin) == ("alice", "enabled", "0", "0", "no")
    assert before <= timestamps.parse(created) <= timestamps.now_us()
    assert created.endswith("Z")


@pytest.mark.parametrize("name", ["", "bad name", "x" * 65, "émile", "a/b", "a\x00b", "a:b"])
def test_user_add_refuses_an_invalid_name(config: Config, name: str) -> None:
    result = run_cli(config, "user", "add", name, "--password-stdin", input=PASSWORD + "\n")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: invalid username ")
    assert "1 to 64 characters of A-Z a-z 0-9 . _ -" in result.stderr
    _assert_clean(result)


def test_passwd_sets_the_new_password(config: Config, seeded_users: Any) -> None:
    result = run_cli(config, "user", "passwd", "bob", "--password-stdin", input=NEW_PASSWORD)
    assert result.exit_code == 0
    assert result.stdout == "password of bob changed; their apps must log in again\n"
    _assert_clean(result)
    assert _password_matches(config, "bob", NEW_PASSWORD)
    assert not _password_matches(config, "bob", PASSWORD)


def test_passwd_refuses_a_short_password_and_keeps_the_old(
    config: Config, seeded_users: Any
) -> None:
    result = run_cli(config, "user", "passwd", "bob", "--password-stdin", input="short\n")
    _error(result, "password must be at least 8 characters")
    assert _password_matches(config, "bob", PASSWORD)


def test_list_disable_enable(config: Config, seeded_users: Any) -> None:
    assert [row[:3] for row in _users(config)] == [
        ["alice", "enabled", "0"],
        ["bob", "enabled", "0"],
        ["carol", "enabled", "0"],
    ]
    result = run_cli(config, "user", "disable", "bob")
    assert (result.exit_code, result.stdout) == (0, "user bob disabled\n")
    assert [row[1] for row in _users(config)] == ["enabled", "disabled", "enabled"]
    result = run_cli(config, "user", "enable", "bob")
    assert (result.exit_code, result.stdout) == (0, "user bob enabled\n")
    assert [row[1] for row in _users(config)] == ["enabled"] * 3


def test_list_of_an_empty_database_says_so(config: Config) -> None:
    assert run_cli(config, "db", "migrate").exit_code == 0
    result = run_cli(config, "user", "list")
    assert (result.exit_code, result.stdout) == (
        0,
        "no users yet; add one with: podsync user add NAME\n",
    )
    result = run_cli(config, "user", "list", "--json")
    assert (result.exit_code, result.stdout) == (0, "[]\n")


def test_list_json_gives_every_field_typed(config: Config, seeded_users: Any) -> None:
    run_cli(config, "user", "disable", "bob")
    result = run_cli(config, "user", "list", "--json")
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [(r["name"], r["enabled"], r["subscriptions"]) for r in rows] == [
        ("alice", True, 0),
        ("bob", False, 0),
        ("carol", True, 0),
    ]
    for row in rows:
        assert set(row) == {"name", "enabled", "subscriptions", "created", "devices", "admin"}
        assert row["admin"] is False
        assert timestamps.format(timestamps.parse(row["created"])) == row["created"]
    table = _users(config)
    assert [r[3] for r in table] == [r["created"] for r in rows]
