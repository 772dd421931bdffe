"""Login starvation (issue 10 item 5, contract 3 rev. 2): a per-address budget
across usernames, a bound on waiting verifications (503 past it), counters in the
database (shared by processes, kept over restarts, bounded, cleared by
`podsync user unlock NAME` and by `passwd`), and WARNING lines for fail2ban."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from podsync.config import Config
from podsync.logs import LOG_FORMAT
from podsync.model import LoginFailure
from podsync.services.auth import loggable_name
from podsync.storage.sqlite import Database
from podsync.store import login_failures
from tests.conftest import PASSWORD, MakeConfig, app_with_test_routes, run_cli

WRONG = "not the password"


async def _status(client: TestClient[Any, Any], name: str, password: str) -> int:
    response = await client.post("/auth/login", json={"username": name, "password": password})
    return response.status


def _config(make_config: MakeConfig, **auth: Any) -> Config:
    return make_config(auth={"login_max_failures": 3, **auth})


async def test_one_address_failing_under_many_names_is_throttled(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any, caplog: Any
) -> None:
    # Before: 60 different unknown names from one address were all answered 401.
    config = _config(make_config, login_max_failures_per_address=4)
    client = await aiohttp_client(app_with_test_routes(config))
    caplog.set_level(logging.WARNING, logger="podsync.auth")
    assert [await _status(client, f"nobody{i}", WRONG) for i in range(4)] == [401] * 4
    # Every name from that address is refused now, a real one with its password too.
    response = await client.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    assert response.status == 429
    assert 1 <= int(response.headers["Retry-After"]) <= 900
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "login failed for user nobody0 from 127.0.0.1" in lines
    assert "login throttled for user alice from 127.0.0.1" in lines


async def test_a_name_cannot_forge_the_address_in_the_log_line(
    aiohttp_client: Any, make_config: MakeConfig, caplog: Any
) -> None:
    client = await aiohttp_client(app_with_test_routes(_config(make_config)))
    caplog.set_level(logging.WARNING, logger="podsync.auth")
    assert await _status(client, "x from 203.0.113.9\nlogin failed", WRONG) == 401
    [line] = [r.getMessage() for r in caplog.records if r.name == "podsync.auth"]
    assert (
        line
        == "login failed for user x\\x20from\\x20203.0.113.9\\x0alogin\\x20failed from 127.0.0.1"
    )


async def test_verifications_waiting_at_once_are_bounded_the_rest_get_503(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    config = _config(make_config, max_pending_logins=2, login_max_failures_per_address=1000)
    client = await aiohttp_client(app_with_test_routes(config))
    responses = await asyncio.gather(
        *(
            client.post("/auth/login", json={"username": f"n{i}", "password": WRONG})
            for i in range(12)
        )
    )
    statuses = sorted(r.status for r in responses)
    assert statuses.count(503) >= 6, statuses
    assert set(statuses) <= {401, 503}
    for response in responses:
        if response.status == 503:
            assert response.headers["Retry-After"] == "1"
            assert (await response.json())["error"] == "Service unavailable"


async def test_counters_are_shared_by_processes_and_kept_over_restarts(
    make_config: MakeConfig, seeded_users: Any
) -> None:
    config = _config(make_config)
    # Two servers on one database (as two processes would be), then a restart.
    async with (
        TestClient(TestServer(app_with_test_routes(config))) as first,
        TestClient(TestServer(app_with_test_routes(config))) as second,
    ):
        # Three different wrong passwords (the same one again would count once).
        assert await _status(first, "alice", WRONG + " 1") == 401
        assert await _status(second, "alice", WRONG + " 2") == 401
        assert await _status(first, "alice", WRONG + " 3") == 401
        assert await _status(second, "alice", PASSWORD) == 429
    async with TestClient(TestServer(app_with_test_routes(config))) as restarted:
        assert await _status(restarted, "alice", PASSWORD) == 429


@pytest.mark.parametrize("command", ["unlock", "passwd"])
async def test_unlock_and_passwd_clear_the_counters(
    aiohttp_client: Any, make_config: MakeConfig, seeded_users: Any, command: str
) -> None:
    config = _config(make_config)
    client = await aiohttp_client(app_with_test_routes(config))
    for n in range(3):
        assert await _status(client, "alice", f"{WRONG} {n}") == 401
    assert await _status(client, "alice", PASSWORD) == 429
    if command == "unlock":
        result = await asyncio.to_thread(run_cli, config, "user", "unlock", "alice")
        assert result.stdout == "failed logins of alice cleared\n"
        password = PASSWORD
    else:
        password = "a brand new password"
        result = await asyncio.to_thread(
            run_cli, config, "user", "passwd", "alice", "--password-stdin", input=password + "\n"
        )
    assert result.exit_code == 0, result.output
    assert await _status(client, "alice", password) == 200


def test_unlock_of_an_unknown_user_is_an_error(config: Config, seeded_users: Any) -> None:
    result = run_cli(config, "user", "unlock", "nobody")
    assert result.exit_code == 1
    assert result.stderr == "Error: no user named 'nobody'\n"


async def test_stored_failures_are_bounded_whatever_the_names(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(login_failures, "MAX_ROWS", 50)
    async with Database(config.database.path) as db:
        for i in range(120):
            failure = LoginFailure(f"192.0.2.{i % 7}", i + 1, i + 1, 1, "opa", "", "password")
            async with db.write() as conn:
                await login_failures.record(conn, str(i) * 10_000, b"k" * 32, failure, 0)
        async with db.read() as conn:
            count, width = await conn.fetch_one(
                "SELECT count(*), max(length(name_hash)) FROM login_failures"
            )
    assert count == 50
    assert width == 32  # a digest, not the 10 kB name


def test_the_documented_fail2ban_filter_finds_the_address_in_both_lines(
    caplog: Any,
) -> None:
    """The failregex shown in docs/operations.md, with fail2ban's <HOST> as a group,
    against the lines podsync writes (its own log format; fail2ban strips the
    timestamp)."""
    guide = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    [regex] = re.findall(r"^failregex = (.*)$", guide, re.MULTILINE)
    pattern = re.compile(regex.replace("<HOST>", r"(?P<host>[0-9a-fA-F.:]+)"))
    formatter = logging.Formatter(LOG_FORMAT)
    auth_log = logging.getLogger("podsync.auth")
    caplog.set_level(logging.WARNING, logger="podsync.auth")
    auth_log.warning("login failed for user %s from %s", loggable_name("a b"), "203.0.113.7")
    auth_log.warning("login throttled for user %s from %s", "alice", "2001:db8::1")
    hosts = []
    for record in caplog.records:
        line = formatter.format(record)
        without_date = re.sub(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+", "", line)
        found = pattern.search(without_date)
        assert found is not None, line
        hosts.append(found["host"])
    assert hosts == ["203.0.113.7", "2001:db8::1"]
