"""Contract section 9: the `podsync user` commands."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from click.testing import Result

from podsync import timestamps
from podsync.config import Config
from podsync.services.passwords import PasswordService
from tests.conftest import PASSWORD, run_cli, with_accounts

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
    return [line.split("\t") for line in result.stdout.splitlines()]


def _password_matches(config: Config, name: str, password: str) -> bool:
    async def check() -> bool:
        user = await with_accounts(config, lambda accounts: accounts.get_user(name))
        passwords = PasswordService()
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
    [(name, state, subscriptions, created)] = _users(config)
    assert (name, state, subscriptions) == ("alice", "enabled", "0")
    assert before <= timestamps.parse(created) <= timestamps.now_us()
    assert created.endswith("Z")


def test_user_add_refuses_a_duplicate(config: Config, seeded_users: Any) -> None:
    result = run_cli(config, "user", "add", "alice", "--password-stdin", input=PASSWORD + "\n")
    _error(result, "a user named 'alice' already exists")


@pytest.mark.parametrize("name", ["", "bad name", "x" * 65, "émile", "a/b", "a\x00b", "a:b"])
def test_user_add_refuses_an_invalid_name(config: Config, name: str) -> None:
    result = run_cli(config, "user", "add", name, "--password-stdin", input=PASSWORD + "\n")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: invalid username ")
    assert "1 to 64 characters of A-Z a-z 0-9 . _ -" in result.stderr
    _assert_clean(result)


@pytest.mark.parametrize("password", ["", "short", "seven77"])
def test_user_add_refuses_a_short_password(config: Config, password: str) -> None:
    result = run_cli(config, "user", "add", "alice", "--password-stdin", input=password + "\n")
    _error(result, "password must be at least 8 characters")
    assert _users(config) == []


def test_password_stdin_without_input_is_an_error(config: Config) -> None:
    result = run_cli(config, "user", "add", "alice", "--password-stdin", input="")
    _error(result, "--password-stdin: nothing on standard input")


def test_without_a_terminal_the_password_prompt_is_refused(config: Config) -> None:
    result = run_cli(config, "user", "add", "alice", input=PASSWORD + "\n" + PASSWORD + "\n")
    _error(result, "no terminal to ask for a password; use --password-stdin")


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


def test_list_of_an_empty_database_prints_nothing(config: Config) -> None:
    assert _users(config) == []


def test_logout(config: Config, seeded_users: Any) -> None:
    result = run_cli(config, "user", "logout", "carol")
    assert (result.exit_code, result.stdout) == (0, "every token of carol revoked\n")


def test_delete_needs_yes_without_a_terminal(config: Config, seeded_users: Any) -> None:
    result = run_cli(config, "user", "delete", "carol", input="y\n")
    _error(result, "refusing to delete without --yes (no terminal to ask)")
    assert len(_users(config)) == 3
    result = run_cli(config, "user", "delete", "carol", "--yes")
    assert (result.exit_code, result.stdout) == (0, "user carol deleted\n")
    assert [row[0] for row in _users(config)] == ["alice", "bob"]


@pytest.mark.parametrize(
    "args",
    [
        ["passwd", "nobody", "--password-stdin"],
        ["disable", "nobody"],
        ["enable", "nobody"],
        ["logout", "nobody"],
        ["delete", "nobody", "--yes"],
    ],
)
def test_unknown_user_is_an_error(config: Config, seeded_users: Any, args: list[str]) -> None:
    result = run_cli(config, "user", *args, input=NEW_PASSWORD + "\n")
    _error(result, "no user named 'nobody'")


@pytest.mark.parametrize(
    "args",
    [
        ["user", "add"],
        ["user", "add", "alice", "--nope"],
        ["user", "frobnicate"],
        ["user", "delete"],
        ["user", "list", "extra"],
        ["--nope", "user", "list"],
        ["user", "disable", "a", "b"],
    ],
)
def test_usage_errors_exit_2(config: Config, args: list[str]) -> None:
    result = run_cli(config, *args, input=PASSWORD + "\n")
    assert result.exit_code == 2
    assert "Usage:" in result.stderr
    _assert_clean(result)


def test_help_shows_an_example(config: Config) -> None:
    for command in ("add", "passwd", "list", "disable", "enable", "logout", "delete"):
        result = run_cli(config, "user", command, "--help")
        assert result.exit_code == 0
        assert "Example:" in result.stdout
