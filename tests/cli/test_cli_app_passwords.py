"""`podsync user app-passwords` through the real CLI, against a real `podsync serve`
on both engines: make one (printed once, on stdout alone), list, revoke by label or
id, and every account command that must end them (passwd, logout, disable, delete)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from podsync.config import Config
from tests.conftest import PASSWORD, ServeProcess
from tests.support.cli_support import add_user, run
from tests.support.gpodder_support import basic, call

pytestmark = pytest.mark.both_engines
SHAPE = re.compile(r"[0-9a-z]{5}(-[0-9a-z]{5}){5}")


def create(config: Config, label: str, name: str = "alice") -> str:
    result = run(config, "user", "app-passwords", name, "--create", label)
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    assert SHAPE.fullmatch(secret), result.stdout  # the secret and nothing else on stdout
    assert secret not in result.stderr
    assert "shown only now" in result.stderr
    return secret


def devices(server: ServeProcess, password: str, name: str = "alice") -> int:
    path = f"/api/2/devices/{name}.json"
    return call(server.url, "GET", path, **basic(name, password)).status


def listed(config: Config, name: str = "alice") -> list[dict[str, object]]:
    result = run(config, "user", "app-passwords", name, "--json")
    assert result.exit_code == 0, result.output
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


def test_make_list_and_revoke_with_the_cli(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> None:
    add_user(config)
    add_user(config, "bob")
    empty = run(config, "user", "app-passwords", "alice")
    assert (empty.exit_code, empty.stdout) == (
        0,
        "alice has no app passwords; make one with --create LABEL\n",
    )
    kasts = create(config, "Kasts on the laptop")
    gpodder = create(config, "gPodder")
    server = serve_process(config)
    assert devices(server, kasts) == 200 and devices(server, gpodder) == 200
    assert devices(server, kasts, "bob") == 401  # alice's, not bob's

    table = run(config, "user", "app-passwords", "alice")
    lines = table.stdout.splitlines()
    assert lines[0] == "ID\tNAME\tCREATED\tLAST USED"
    assert [line.split("\t")[1] for line in lines[1:]] == ["Kasts on the laptop", "gPodder"]
    assert all(
        re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", line.split("\t")[3]) for line in lines[1:]
    )
    assert kasts not in table.output and gpodder not in table.output
    rows = listed(config)
    assert [r["name"] for r in rows] == ["Kasts on the laptop", "gPodder"]
    assert all(r["last_used"] is not None for r in rows)

    # Refusals name the problem and change nothing.
    for args, message in (
        (("--create", "gPodder"), "already has an app password named 'gPodder'"),
        (("--create", " "), "give the app password a name"),
        (("--revoke", "AntennaPod"), "alice has no app password named 'AntennaPod'"),
        (("--revoke", "9" * 30), "alice has no app password named"),
    ):
        refused = run(config, "user", "app-passwords", "alice", *args)
        assert refused.exit_code == 1 and message in refused.stderr, refused.output
    nobody = run(config, "user", "app-passwords", "nobody", "--create", "x")
    assert nobody.exit_code == 1 and "no user named 'nobody'" in nobody.stderr
    both = run(config, "user", "app-passwords", "alice", "--create", "a", "--revoke", "b")
    assert both.exit_code == 2
    assert len(listed(config)) == 2

    revoked = run(config, "user", "app-passwords", "alice", "--revoke", "Kasts on the laptop")
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    assert devices(server, kasts) == 401 and devices(server, gpodder) == 200
    by_id = run(config, "user", "app-passwords", "alice", "--revoke", str(rows[1]["id"]))
    assert by_id.exit_code == 0, by_id.output
    assert devices(server, gpodder) == 401
    assert listed(config) == []
    # The server logged neither secret.
    assert kasts not in server.output() and gpodder not in server.output()


@pytest.mark.parametrize("command", ["passwd", "logout", "disable", "delete"])
def test_every_account_command_ends_them_on_a_running_server(
    config: Config, serve_process: Callable[..., ServeProcess], command: str
) -> None:
    add_user(config)
    add_user(config, "bob")
    secret, bobs = create(config, "Kasts"), create(config, "Kasts", "bob")
    server = serve_process(config)
    assert devices(server, secret) == 200
    args = {
        "passwd": ("passwd", "alice", "--password-stdin"),
        "logout": ("logout", "alice"),
        "disable": ("disable", "alice"),
        "delete": ("delete", "alice", "--yes"),
    }[command]
    result = run(config, "user", *args, input="another long password\n")
    assert result.exit_code == 0, result.output
    assert devices(server, secret) == 401
    if command != "delete":
        run(config, "user", "enable", "alice")
        assert devices(server, secret) == 401  # ended, not paused
        assert listed(config) == []
    assert devices(server, bobs, "bob") == 200  # another user's are untouched
    assert devices(server, PASSWORD, "bob") == 200
