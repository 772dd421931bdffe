"""Guesses are bounded per name, not only per address (contract section 17): past
`auth.login_max_failures_per_name` different wrong passwords for one name within an
hour, from any number of addresses, the name signs in only from addresses where it
signed in during the last 30 days (or with an app password); everyone else gets 429.
The person and the admin see it and Unlock lifts it. An IPv6 address counts by its
/64. Through a real `podsync serve` behind a trusted proxy header (the addresses
127.0.0.20-49 and 2001:db8::/64 as X-Forwarded-For)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from urllib.parse import urlencode

import pytest

from podsync.config import Config
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.gpodder_support import call
from tests.support.replica_http import basic_header
from tests.support.ui_session import cli
from tests.ui.test_subscribe_fetch_limits import FORM, sign_in

pytestmark = pytest.mark.both_engines
PER_NAME = 50  # the default


@pytest.fixture
def config(make_config: MakeConfig, seeded_users: tuple[str, ...]) -> Config:
    config = make_config(server={"trusted_proxies": ["127.0.0.1"]})
    cli(config, "user", "add", "root", "--admin", "--password-stdin", input=PASSWORD + "\n")
    return config


def login(base: str, address: str, password: str, name: str = "alice") -> int:
    """An Open Podcast API login from `address` (the trusted proxy's header)."""
    body = json.dumps({"username": name, "password": password}).encode()
    answer = call(
        base, "POST", "/auth/login", body,
        **{"Content-Type": "application/json", "X-Forwarded-For": address},
    )  # fmt: skip
    return answer.status


def test_thirty_addresses_get_a_bounded_number_of_guesses_and_home_keeps_working(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> None:
    """The finding: 30 addresses x 4 wrong passwords, 120 answers of 401, none 429,
    and the right password then worked."""
    secret = cli(config, "user", "app-passwords", "alice", "--create", "Kasts").strip()
    server = serve_process(config)
    home = "127.0.0.10"
    assert login(server.url, home, PASSWORD) == 200  # the household's usual address
    alice = sign_in(server.url, "alice")  # a browser session, before any guess
    statuses = [login(server.url, f"127.0.0.{20 + n % 30}", f"guess {n}") for n in range(2 * 30)]
    assert statuses[:PER_NAME] == [401] * PER_NAME
    assert statuses[PER_NAME:] == [429] * (60 - PER_NAME)
    # The right password from an address that never signed in as alice: refused too.
    assert login(server.url, "127.0.0.60", PASSWORD) == 429
    # Home still signs in; so does an app password from anywhere (no guess finds
    # one), and bob, from anywhere.
    assert login(server.url, home, PASSWORD) == 200
    app = call(
        server.url, "GET", "/subscriptions/alice.txt",
        Authorization=basic_header("alice", secret), **{"X-Forwarded-For": "127.0.0.61"},
    )  # fmt: skip
    assert app.status == 200, app.body
    account = call(
        server.url, "GET", "/subscriptions/alice.txt",
        Authorization=basic_header("alice", PASSWORD), **{"X-Forwarded-For": "127.0.0.62"},
    )  # fmt: skip
    assert account.status == 429
    assert login(server.url, "127.0.0.60", PASSWORD, "bob") == 200
    # alice sees it on her Overview, the admin on her user page.
    overview = call(server.url, "GET", "/ui/", Cookie=alice[0]).body.decode()
    assert "Your name is guarded until" in overview
    assert f"{PER_NAME} different wrong passwords were tried for it from 30 addresses" in (overview)
    root = sign_in(server.url, "root")
    page = call(server.url, "GET", "/ui/admin/user?name=alice", Cookie=root[0]).body.decode()
    assert "guarded</span> until" in page
    # Unlock lifts it.
    cookie, csrf = alice
    done = call(
        server.url, "POST", "/ui/account/unlock", urlencode({"csrf": csrf}).encode(),
        **FORM, Cookie=cookie,
    )  # fmt: skip
    assert done.status == 303
    assert login(server.url, "127.0.0.60", PASSWORD) == 200


def test_an_ipv6_address_counts_by_its_64(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> None:
    server = serve_process(config)
    for n in range(5):  # auth.login_max_failures, each from another address of the /64
        assert login(server.url, f"2001:db8:1:2::{n + 1:x}", f"guess {n}") == 401
    assert login(server.url, "2001:db8:1:2:ffff::9", PASSWORD) == 429
    assert login(server.url, "2001:db8:1:3::1", PASSWORD) == 200  # another /64
    # The admin sees the /64 the failures came from.
    root = sign_in(server.url, "root")
    page = call(server.url, "GET", "/ui/admin/user?name=alice", Cookie=root[0]).body.decode()
    assert re.search(r"locked out</span> from <code>2001:db8:1:2::/64</code>", page), page
