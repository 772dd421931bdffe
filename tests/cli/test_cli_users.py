"""`podsync user ...`, `--version` and `--help` (contract section 9): success and
error paths, exit codes 0/1/2, and no password or token in any output."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from click.testing import CliRunner

from podsync import __version__
from podsync.cli import cli
from podsync.config import Config
from tests.conftest import PASSWORD, bearer, login
from tests.opa.test_opml_parse import FIXTURES
from tests.support.cli_support import add_user, run
from tests.support.server_support import podsync_command
from tests.support.terminal import converse

NEW_PASSWORD = "another fine passphrase"


def users_table(config: Config) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(config.database.path)) as conn:
        return conn.execute(
            "SELECT name, enabled, token_generation FROM users ORDER BY name"
        ).fetchall()


def test_add_reads_one_line_from_stdin_and_never_prints_it(config: Config) -> None:
    result = run(config, "user", "add", "alice", "--password-stdin", input=PASSWORD + "\r\n")
    assert (result.exit_code, result.stdout) == (0, "user alice created\n")
    assert PASSWORD not in result.output
    assert users_table(config) == [("alice", 1, 0)]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["bad name!"], PASSWORD, "invalid username 'bad name!'"),
        (["x" * 65], PASSWORD, "invalid username"),
        (["carol"], "short", "password must be at least 8 characters"),
        (["carol"], "", "--password-stdin: nothing on standard input"),
    ],
)
def test_add_refuses_bad_names_and_passwords(
    config: Config, args: list[str], stdin: str, message: str
) -> None:
    result = run(config, "user", "add", *args, "--password-stdin", input=stdin and stdin + "\n")
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: ")
    assert message in line
    if stdin:
        assert stdin not in result.output


def test_add_without_a_terminal_asks_for_password_stdin(config: Config) -> None:
    result = run(config, "user", "add", "alice")
    assert result.exit_code == 1
    assert result.stderr == "Error: no terminal to ask for a password; use --password-stdin\n"


def test_adding_an_existing_user_fails(config: Config) -> None:
    add_user(config)
    result = run(config, "user", "add", "alice", "--password-stdin", input=PASSWORD + "\n")
    assert (result.exit_code, result.stderr) == (
        1,
        "Error: a user named 'alice' already exists\n",
    )


def test_add_on_a_terminal_asks_twice_without_echo(config: Config) -> None:
    secret = PASSWORD.encode()
    code, seen = converse(
        podsync_command(config, "user", "add", "tty"),
        [
            (b"Password (at least 8 characters):", secret),
            (b"Repeat for confirmation:", secret),
            (b"created", None),
        ],
    )
    assert code == 0
    assert b"user tty created" in seen
    assert secret not in seen
    assert ("tty", 1, 0) in users_table(config)


@pytest.mark.parametrize("command", [("user", "add", "tty"), ("user", "passwd", "alice")])
def test_a_short_password_on_a_terminal_is_refused_before_it_is_asked_again(
    config: Config, command: tuple[str, ...]
) -> None:
    """The prompt says the minimum; a shorter password is refused at once, and the
    first prompt comes back, not the repeat."""
    add_user(config, "alice")
    secret = NEW_PASSWORD.encode()
    prompt = b"Password (at least 8 characters): "
    code, seen = converse(
        podsync_command(config, *command),
        [
            (prompt, b"short"),
            (b"Error: password must be at least 8 characters\r\n" + prompt, secret),
            (b"Repeat for confirmation:", secret),
            (b"alice" if "passwd" in command else b"created", None),
        ],
    )
    assert code == 0, seen
    assert seen.count(b"Repeat for confirmation") == 1
    assert b"short" not in seen and secret not in seen
    assert command[-1] in [name for name, *_ in users_table(config)]


def test_delete_on_a_terminal_asks_first(config: Config) -> None:
    add_user(config, "alice")
    add_user(config, "bob")
    prompt = b"Delete user alice and all their data? [y/N]:"
    code, seen = converse(podsync_command(config, "user", "delete", "alice"), [(prompt, b"n")])
    assert code == 1
    assert b"Error: not deleted" in seen
    code, _ = converse(podsync_command(config, "user", "delete", "alice"), [(prompt, b"y")])
    assert code == 0
    assert [name for name, *_ in users_table(config)] == ["bob"]


def test_list_shows_name_state_subscriptions_and_rfc3339_creation(config: Config) -> None:
    add_user(config, "alice")
    add_user(config, "bob")
    run(config, "opml", "import", "alice", str(FIXTURES / "castro.opml"))
    run(config, "user", "disable", "bob")
    assert run(config, "user", "admin", "alice").exit_code == 0
    result = run(config, "user", "list")
    assert result.exit_code == 0
    header, *lines = result.stdout.splitlines()
    assert header == "NAME\tSTATE\tSUBSCRIPTIONS\tCREATED\tDEVICES\tADMIN"
    rows = [line.split("\t") for line in lines]
    assert [row[:3] for row in rows] == [["alice", "enabled", "2"], ["bob", "disabled", "0"]]
    assert [row[5] for row in rows] == ["yes", "no"]
    for row in rows:
        assert row[3].endswith("Z") and row[3][10] == "T"
    listed = json.loads(run(config, "user", "list", "--json").stdout)
    assert [(u["name"], u["admin"]) for u in listed] == [("alice", True), ("bob", False)]


@pytest.mark.parametrize(
    "args",
    [
        ["passwd", "ghost", "--password-stdin"],
        ["disable", "ghost"],
        ["enable", "ghost"],
        ["logout", "ghost"],
        ["delete", "ghost", "--yes"],
    ],
)
def test_commands_on_an_unknown_user_fail_with_one_line(config: Config, args: list[str]) -> None:
    assert run(config, "db", "migrate").exit_code == 0
    result = run(config, "user", *args, input=NEW_PASSWORD + "\n")
    assert (result.exit_code, result.stderr) == (1, "Error: no user named 'ghost'\n")


@pytest.mark.parametrize(
    "args",
    [
        ["user", "add"],
        ["user", "add", "alice", "--bogus"],
        ["user", "frobnicate"],
        ["opml", "import", "alice"],
        ["db", "backup"],
        ["serve", "--port", "99999"],
    ],
)
def test_usage_errors_exit_2(config: Config, args: list[str]) -> None:
    result = run(config, *args)
    assert result.exit_code == 2
    assert "Usage:" in result.stderr


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"podsync {__version__}\n")


COMMANDS = [
    ["serve"],
    ["user", "add"],
    ["user", "passwd"],
    ["user", "list"],
    ["user", "disable"],
    ["user", "enable"],
    ["user", "logout"],
    ["user", "delete"],
    ["opml", "import"],
    ["opml", "export"],
    ["db", "migrate"],
    ["db", "backup"],
    ["db", "check"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(command: list[str]) -> None:
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0
    example = result.stdout.split("Example:")[1]
    assert "podsync " in example
    assert " ".join(command) in example


def test_delete_without_yes_and_without_a_terminal_refuses(config: Config) -> None:
    add_user(config)
    result = run(config, "user", "delete", "alice")
    assert result.exit_code == 1
    assert "--yes" in result.stderr
    assert [name for name, *_ in users_table(config)] == ["alice"]


def test_delete_removes_the_user_and_their_subscriptions(config: Config) -> None:
    add_user(config)
    run(config, "opml", "import", "alice", str(FIXTURES / "castro.opml"))
    result = run(config, "user", "delete", "alice", "--yes")
    assert (result.exit_code, result.stdout) == (0, "user alice deleted\n")
    with closing(sqlite3.connect(config.database.path)) as conn:
        assert conn.execute("SELECT count(*) FROM subscriptions").fetchone() == (0,)
    assert users_table(config) == []


async def _status(client: TestClient[Any, Any], token: str) -> int:
    response = await client.get("/api/v1/subscriptions", headers=bearer(token))
    return response.status


async def _cli(config: Config, *args: str, input: str | None = None) -> str:
    """The CLI from an async test: in a thread, as it runs its own event loop."""
    result = await asyncio.to_thread(run, config, *args, input=input)
    assert result.exit_code == 0, result.output
    return result.output


async def test_passwd_logout_and_disable_revoke_tokens_at_once(
    client: TestClient[Any, Any], alice: str, config: Config
) -> None:
    outputs = []
    assert await _status(client, alice) == 200
    outputs.append(await _cli(config, "user", "logout", "alice"))
    assert await _status(client, alice) == 401

    token = (await login(client))["access_token"]
    outputs.append(
        await _cli(config, "user", "passwd", "alice", "--password-stdin", input=NEW_PASSWORD)
    )
    assert await _status(client, token) == 401
    response = await client.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    assert response.status == 401
    token = (await login(client, "alice", NEW_PASSWORD))["access_token"]

    outputs.append(await _cli(config, "user", "disable", "alice"))
    assert await _status(client, token) == 401
    response = await client.post(
        "/auth/login", json={"username": "alice", "password": NEW_PASSWORD}
    )
    assert response.status == 401
    outputs.append(await _cli(config, "user", "enable", "alice"))
    await login(client, "alice", NEW_PASSWORD)

    for output in outputs:
        for secret in (PASSWORD, NEW_PASSWORD, alice, token):
            assert secret not in output


def test_a_broken_config_is_an_error_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[server]\nport = 'eighty'\n")
    result = CliRunner().invoke(cli, ["--config", str(bad), "user", "list"])
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: configuration:")
    assert "port" in line
