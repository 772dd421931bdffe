"""Contract rev. 5, "A stale device does not lock out a household": the lockout counts
different wrong passwords per name and address. A phone still set up with an old
password (or an app password the password change revoked) retries it again and
again; that counts once, so the right password keeps working for every device at
that address, on every door that checks passwords and across server processes.
Different wrong passwords lock out as before. Through real `podsync serve`
processes and the real CLI; what is stored is a keyed hash, never the password."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import re
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import closing
from pathlib import Path

import aiohttp
import pytest

from podsync.config import Config
from podsync.logs import LOG_FORMAT
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.ui_session import CSRF, Browser, cli, words

OLD = "the password before the change"
NC = "/index.php/apps/gpoddersync"
HOME = {"X-Forwarded-For": "203.0.113.5"}  # the household, behind the trusted proxy
GUESSER = {**HOME, "User-Agent": "curl/8.5.0"}
APP_PASSWORD = re.compile(r"[0-9a-z]{5}(?:-[0-9a-z]{5}){5}")

Door = Callable[[str, str, str, dict[str, str]], Awaitable[str]]


def _basic(name: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{name}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def _outcome(status: int) -> str:
    return {200: "ok", 303: "ok", 401: "refused", 429: "locked"}.get(status, str(status))


async def _request(method: str, url: str, **kwargs: object) -> str:
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, allow_redirects=False, **kwargs) as response,  # type: ignore[arg-type]
    ):
        await response.read()
        return _outcome(response.status)


async def opa_login(base: str, name: str, password: str, headers: dict[str, str]) -> str:
    body = {"username": name, "password": password}
    return await _request("POST", base + "/auth/login", json=body, headers=headers)


async def gpodder_basic(base: str, name: str, password: str, headers: dict[str, str]) -> str:
    url = f"{base}/api/2/devices/{name}.json"
    return await _request("GET", url, headers={**headers, **_basic(name, password)})


async def gpodder_login(base: str, name: str, password: str, headers: dict[str, str]) -> str:
    url = f"{base}/api/2/auth/{name}/login.json"
    return await _request("POST", url, headers={**headers, **_basic(name, password)})


async def nextcloud_basic(base: str, name: str, password: str, headers: dict[str, str]) -> str:
    url = f"{base}{NC}/subscriptions?since=0"
    return await _request("GET", url, headers={**headers, **_basic(name, password)})


async def web_sign_in(base: str, name: str, password: str, headers: dict[str, str]) -> str:
    form = {"username": name, "password": password}
    return await _request("POST", base + "/ui/login", data=form, headers=headers)


DOORS: dict[str, Door] = {
    "Open Podcast API login": opa_login,
    "gpodder Basic": gpodder_basic,
    "gpodder login.json": gpodder_login,
    "Nextcloud Basic": nextcloud_basic,
    "web UI sign-in": web_sign_in,
}


def _stale_setup(config: Config) -> str:
    """alice changed her password from OLD to PASSWORD; an app password made before
    the change (ended by it) is returned, as a phone still has it."""
    cli(config, "user", "add", "alice", "--password-stdin", input=OLD + "\n")
    made = cli(config, "user", "app-passwords", "alice", "--create", "Kasts")
    found = APP_PASSWORD.search(made)
    assert found is not None, made
    cli(config, "user", "passwd", "alice", "--password-stdin", input=PASSWORD + "\n")
    return found.group(0)


@pytest.fixture
async def stale(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> tuple[Config, ServeProcess, str]:
    """(config, a real server, alice's ended app password)"""
    revoked = await asyncio.to_thread(_stale_setup, config)
    server = await asyncio.to_thread(serve_process, config)
    return config, server, revoked


STALE_TRIES = 8  # past login_max_failures (5) however they would be counted


@pytest.mark.parametrize("door", [*DOORS, "Nextcloud Basic, a revoked app password"])
async def test_an_old_password_repeated_never_locks_out_the_right_one(
    stale: tuple[Config, ServeProcess, str], door: str
) -> None:
    _config, server, revoked = stale
    base = server.url
    attempt = DOORS.get(door, nextcloud_basic)
    old = revoked if door not in DOORS else OLD
    for _ in range(STALE_TRIES):
        assert await attempt(base, "alice", old, {}) == "refused"
    # The household's other devices, and this one once updated, sign in at once.
    assert await attempt(base, "alice", PASSWORD, {}) == "ok"
    # Only one failure was logged for fail2ban; the repeats are quieter lines.
    output = server.output()
    assert output.count("login failed for user alice from 127.0.0.1") == 1, output
    assert output.count("repeated wrong password for user alice from 127.0.0.1") == (
        STALE_TRIES - 1
    )
    # Different wrong passwords still lock out, the old one counting as one of them.
    for n in range(4):
        assert await attempt(base, "alice", f"a guess {n}", {}) == "refused"
    assert await attempt(base, "alice", PASSWORD, {}) == "locked"
    assert await opa_login(base, "alice", PASSWORD, {}) == "locked"  # on every door


@pytest.mark.parametrize("db_engine", ["sqlite", "postgresql"], indirect=True)
async def test_the_same_old_password_counts_once_across_doors_and_processes(
    stale: tuple[Config, ServeProcess, str], serve_process: Callable[..., ServeProcess]
) -> None:
    config, first, _revoked = stale
    second = await asyncio.to_thread(serve_process, config)  # another process, one database
    servers = (first.url, second.url)
    doors = list(DOORS.values())
    for n in range(10):
        assert await doors[n % len(doors)](servers[n % 2], "alice", OLD, {}) == "refused"
    for base in servers:
        for attempt in doors:
            assert await attempt(base, "alice", PASSWORD, {}) == "ok"
    # Four different guesses, split between the processes, make five with the old one.
    for n in range(4):
        assert await doors[n](servers[n % 2], "alice", f"a guess {n}", {}) == "refused"
    for base in servers:
        assert await web_sign_in(base, "alice", PASSWORD, {}) == "locked"
        assert await gpodder_basic(base, "alice", PASSWORD, {}) == "locked"


async def test_what_is_kept_is_a_keyed_hash_never_the_password(
    stale: tuple[Config, ServeProcess, str],
) -> None:
    config, server, _revoked = stale
    for _ in range(3):
        assert await opa_login(server.url, "alice", OLD, {}) == "refused"
    assert await opa_login(server.url, "alice", OLD + " typo", {}) == "refused"
    with closing(sqlite3.connect(config.database.path)) as db:
        rows = db.execute(
            "SELECT password_key, attempts, door, address, reason FROM login_failures ORDER BY id"
        ).fetchall()
    assert [row[1:] for row in rows] == [
        (3, "opa", "127.0.0.1", "password"),
        (1, "opa", "127.0.0.1", "password"),
    ]
    old_key = rows[0][0]
    assert len(old_key) == 32
    plain = {
        hashlib.sha256(OLD.encode()).digest(),
        hashlib.sha256(f"alice\x00{OLD}".encode()).digest(),
        hashlib.sha256(f"alice:{OLD}".encode()).digest(),
    }
    assert old_key not in plain
    database = Path(config.database.path)
    for path in database.parent.glob(database.name + "*"):  # the WAL too
        assert OLD.encode() not in path.read_bytes(), path


def csrf(page: str) -> str:
    found = CSRF.search(page)
    assert found is not None, page
    return found.group(1)


async def _lock_alice_out_from_home(base: str) -> None:
    """Five different wrong passwords from the household's address (through the
    trusted proxy), as a guesser would; alice's browser is elsewhere."""
    for n in range(5):
        assert await opa_login(base, "alice", f"a guess {n}", GUESSER) == "refused"
    assert await gpodder_basic(base, "alice", OLD, HOME) == "locked"
    assert await gpodder_basic(base, "alice", PASSWORD, HOME) == "locked"


@pytest.fixture
async def behind_proxy(
    make_config: MakeConfig, serve_process: Callable[..., ServeProcess]
) -> tuple[Config, str]:
    config = make_config(server={"trusted_proxies": ["127.0.0.1"]})
    await asyncio.to_thread(_stale_setup, config)
    await asyncio.to_thread(
        cli, config, "user", "add", "carol", "--password-stdin", input=PASSWORD + "\n"
    )
    await asyncio.to_thread(cli, config, "user", "admin", "carol")
    server = await asyncio.to_thread(serve_process, config)
    return config, server.url


async def test_a_locked_out_person_sees_it_on_the_overview_and_unlocks_their_name(
    behind_proxy: tuple[Config, str],
) -> None:
    _config, base = behind_proxy
    alice = Browser(base)
    try:
        await alice.sign_in("alice")  # from 127.0.0.1, before the lockout
        _, quiet = await alice.page("/ui/")
        assert "Failed sign-ins" not in quiet
        await _lock_alice_out_from_home(base)
        status, page = await alice.page("/ui/")
        assert status == 200, page
        text = words(page)
        assert re.search(
            r"Your name is locked out from address 203\.0\.113\.5 until (?:today|tomorrow) "
            r"\d\d:\d\d: 5 different wrong passwords were tried for it from there "
            r"within 15 minutes\. Until then every app and browser at that address is "
            r"refused as alice, even with the right password\.",
            text,
        ), text
        # The table says from where, how many, when, by what and why.
        assert re.search(
            r"203\.0\.113\.5 locked out 5 different, 5 tries (?:today|yesterday) \d\d:\d\d "
            r"by curl/8\.5\.0 \(Open Podcast API\): wrong password",
            text,
        ), text
        # An ordinary form: without its CSRF token, or from another site, nothing.
        for data, headers in (({}, {}), ({"csrf": csrf(page)}, {"Origin": "https://evil.example"})):
            async with alice.http.post(
                base + "/ui/account/unlock", data=data, headers=headers, allow_redirects=False
            ) as refused:
                assert refused.status == 403
        assert await gpodder_basic(base, "alice", PASSWORD, HOME) == "locked"
        assert await alice.submit("/ui/", "/ui/account/unlock") == 303
        status, page = await alice.page("/ui/?done=unlocked")
        assert "Unlocked: every app and browser may sign in as you again." in page
        assert "Failed sign-ins" not in page
    finally:
        await alice.close()
    assert await gpodder_basic(base, "alice", PASSWORD, HOME) == "ok"


async def test_the_admin_page_shows_the_failures_and_unlocks(
    behind_proxy: tuple[Config, str],
) -> None:
    _config, base = behind_proxy
    kasts = {**HOME, "User-Agent": "Kasts/23.08"}
    for _ in range(3):  # the stale phone first, then four guesses
        assert await nextcloud_basic(base, "alice", OLD, kasts) == "refused"
    for n in range(4):
        assert await opa_login(base, "alice", f"a guess {n}", GUESSER) == "refused"
    assert await nextcloud_basic(base, "alice", PASSWORD, kasts) == "locked"
    carol = Browser(base)
    try:
        await carol.sign_in("carol")
        status, page = await carol.page("/ui/admin/user?name=alice")
        assert status == 200, page
        text = words(page)
        assert re.search(
            r"Sign-in locked out from 203\.0\.113\.5 until (?:today|tomorrow) \d\d:\d\d", text
        ), text
        # Five different wrong passwords (the old one and four guesses), seven tries.
        assert re.search(
            r"203\.0\.113\.5 locked out 5 different, 7 tries (?:today|yesterday) \d\d:\d\d "
            r"by curl/8\.5\.0 \(Open Podcast API\): wrong password",
            text,
        ), text
        assert "Unlock" in text
        assert await carol.submit(
            "/ui/admin/user?name=alice", "/ui/admin/users/unlock", name="alice"
        ) == (303)
        _, after = await carol.page("/ui/admin/user?name=alice")
        assert "Sign-in not locked out" in words(after)
        assert "Failed sign-ins" not in after
    finally:
        await carol.close()
    assert await web_sign_in(base, "alice", PASSWORD, HOME) == "ok"


def test_the_documented_fail2ban_filter_does_not_count_a_repeat() -> None:
    """A stale phone's repeats are logged, but not as lines fail2ban bans on: the
    filter in docs/operations.md, against the line podsync writes for a repeat."""
    guide = (Path(__file__).parents[2] / "docs" / "operations.md").read_text()
    [regex] = re.findall(r"^failregex = (.*)$", guide, re.MULTILINE)
    pattern = re.compile(regex.replace("<HOST>", r"(?P<host>[0-9a-fA-F.:]+)"))
    formatter = logging.Formatter(LOG_FORMAT)

    def line(level: int, message: str) -> str:
        record = logging.LogRecord("podsync.auth", level, __file__, 1, message, None, None)
        return formatter.format(record).split(" ", 2)[2]  # fail2ban strips the time

    assert pattern.search(line(logging.WARNING, "login failed for user alice from 192.0.2.4"))
    repeat = "repeated wrong password for user alice from 192.0.2.4 (counted once)"
    assert not pattern.search(line(logging.INFO, repeat))
    assert not pattern.search(line(logging.WARNING, repeat))
