"""Contract rev. 5, "A grant ends with every other login": a Login Flow granted but
not yet polled is a credential waiting to be handed out, so everything that ends a
user's logins ends it too: its poll answers 404 and no app password comes out.
Every path (the web UI's Sign out everywhere and password change, the admin page's
Disable and Reset password, `user logout`, `user passwd`, `user disable` then
`enable`, `user delete`) against a pending grant, through a real `podsync serve`
and the real CLI in its own process. And the grant page says which address started
the sign-in and when, and that the app's name is the app's own word."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from podsync.config import Config
from podsync.model import User
from podsync.services.accounts import AccountService
from podsync.services.nextcloud.login_flows import LoginFlows
from podsync.services.passwords import PasswordService
from podsync.storage.engine import create_engine
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.ui_session import Browser, cli, words

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
AGENT = "AntennaPod/3.7.0"
FORM = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
NEW_PASSWORD = "a brand new password"


@pytest.fixture
async def served(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> AsyncIterator[tuple[Config, str]]:
    """alice, bob and carol (an admin) on a real server."""
    await asyncio.to_thread(cli, config, "user", "admin", "carol")
    server = await asyncio.to_thread(serve_process, config)
    yield config, server.url


async def start_flow(base: str, headers: dict[str, str] | None = None) -> tuple[str, str]:
    """(flow id, poll token) of a Login Flow started as AntennaPod starts it."""
    async with (
        aiohttp.ClientSession() as app,
        app.post(
            base + "/index.php/login/v2",
            data=b"",
            headers={**FORM, "User-Agent": AGENT, **(headers or {})},
        ) as response,
    ):
        assert response.status == 200, await response.text()
        body = await response.json()
    return body["login"].rsplit("/", 1)[1], body["poll"]["token"]


async def poll(base: str, token: str) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as app,
        app.post(
            base + "/index.php/login/v2/poll", data=f"token={token}".encode(), headers=FORM
        ) as response,
    ):
        return response.status, await response.json()


async def grant(browser: Browser, flow_id: str) -> None:
    path = f"/ui/grant/{flow_id}"
    assert await browser.submit(path, path, decision="grant") == 200


Path = Callable[[Config, str, Browser], Awaitable[None]]


async def sign_out_everywhere(config: Config, base: str, alice: Browser) -> None:
    await alice.submit("/ui/account", "/ui/account/logout-everywhere")


async def change_password(config: Config, base: str, alice: Browser) -> None:
    await alice.submit(
        "/ui/account",
        "/ui/account/password",
        current=PASSWORD,
        new=NEW_PASSWORD,
        again=NEW_PASSWORD,
    )


async def _as_admin(base: str, action: str, **fields: str) -> None:
    admin = Browser(base)
    try:
        await admin.sign_in("carol")
        await admin.submit("/ui/admin/user?name=alice", action, name="alice", **fields)
    finally:
        await admin.close()


async def admin_disables(config: Config, base: str, alice: Browser) -> None:
    await _as_admin(base, "/ui/admin/users/disable")
    await _as_admin(base, "/ui/admin/users/enable")


async def admin_resets_password(config: Config, base: str, alice: Browser) -> None:
    await _as_admin(base, "/ui/admin/users/password", password=NEW_PASSWORD)


def _command(*args: str, input: str = "") -> Path:
    async def run(config: Config, base: str, alice: Browser) -> None:
        await asyncio.to_thread(cli, config, *args, input=input)

    return run


PATHS: dict[str, Path] = {
    "web UI: Sign out everywhere": sign_out_everywhere,
    "web UI: change password": change_password,
    "admin page: Disable, then Enable": admin_disables,
    "admin page: Reset password": admin_resets_password,
    "user logout": _command("user", "logout", "alice"),
    "user passwd": _command(
        "user", "passwd", "alice", "--password-stdin", input=NEW_PASSWORD + "\n"
    ),
    "user disable, then enable": _command("user", "disable", "alice"),
    "user delete": _command("user", "delete", "alice", "--yes"),
}


@pytest.mark.parametrize("path", sorted(PATHS))
async def test_a_granted_flow_not_yet_polled_ends_with_every_login(
    served: tuple[Config, str], path: str
) -> None:
    config, base = served
    flow_id, token = await start_flow(base)
    alice = Browser(base)
    try:
        await alice.sign_in("alice")
        await grant(alice, flow_id)
        await PATHS[path](config, base, alice)
    finally:
        await alice.close()
    if path == "user disable, then enable":
        await asyncio.to_thread(cli, config, "user", "enable", "alice")
    # The app polls only now: nothing comes out, now or later.
    for _ in range(2):
        status, body = await poll(base, token)
        assert status == 404, body
        assert "appPassword" not in body
    if path != "user delete":
        listed = await asyncio.to_thread(cli, config, "user", "app-passwords", "alice")
        assert "AntennaPod" not in listed, listed


async def test_without_any_of_them_the_granted_flow_gives_its_app_password(
    served: tuple[Config, str],
) -> None:
    """The control of the test above: the same steps, no path, one app password."""
    config, base = served
    flow_id, token = await start_flow(base)
    alice = Browser(base)
    try:
        await alice.sign_in("alice")
        await grant(alice, flow_id)
    finally:
        await alice.close()
    status, body = await poll(base, token)
    assert status == 200, body
    assert body["loginName"] == "alice" and body["appPassword"]
    listed = await asyncio.to_thread(cli, config, "user", "app-passwords", "alice")
    assert "AntennaPod" in listed


async def test_a_grant_written_after_the_logins_ended_is_refused(config: Config) -> None:
    """The grant page's session was checked before "Sign out everywhere" ran in
    another request; the grant that follows must not write a credential the sign-out
    could no longer end."""
    db = create_engine(config.database)
    await db.open()
    passwords = PasswordService.for_config(config.auth)
    try:
        accounts = AccountService(db, passwords)
        await accounts.add_user("alice", PASSWORD)
        flows = LoginFlows(db)
        started = await flows.start(AGENT, "192.0.2.7")
        read_before: User = await accounts.get_user("alice")
        await accounts.logout("alice")
        assert await flows.decide(started.flow_id, read_before, grant=True) is False
        assert await flows.spend(started.token) is None
        assert await flows.pending(started.flow_id) is not None  # still undecided
        fresh = await accounts.get_user("alice")
        assert await flows.decide(started.flow_id, fresh, grant=True) is True
    finally:
        passwords.close()
        await db.close()


async def test_the_grant_page_names_the_address_and_time_and_does_not_vouch_for_the_app(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> None:
    # Behind a trusted proxy, so that the app and the browser can come from two
    # addresses, as when someone else started the sign-in.
    config = make_config(server={"trusted_proxies": ["127.0.0.1"]})
    server = await asyncio.to_thread(serve_process, config)
    base = server.url
    flow_id, _token = await start_flow(base, {"X-Forwarded-For": "203.0.113.9"})
    own_flow_id, _ = await start_flow(base)
    alice = Browser(base)
    try:
        await alice.sign_in("alice")
        status, page = await alice.page(f"/ui/grant/{flow_id}")
        _, own_page = await alice.page(f"/ui/grant/{own_flow_id}")
    finally:
        await alice.close()
    assert status == 200, page
    text = words(page)
    assert "An app that calls itself AntennaPod asks to sync" in text
    assert "The app says it is AntennaPod (its own word: podsync cannot verify the name)" in text
    assert "Sign-in started from 203.0.113.9 (not this browser's address, 127.0.0.1)" in text
    started = re.search(r'<dt>Started</dt><dd><time datetime="([^"]+)"', page)
    assert started is not None, page
    age = datetime.now(UTC) - datetime.fromisoformat(started.group(1))
    assert timedelta(0) <= age < timedelta(minutes=2), started.group(1)
    assert "Sign-in started from 127.0.0.1 (this browser's address too)" in words(own_page)
