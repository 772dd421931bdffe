"""Sync health (webui rev. 3, point 6) through the real app on both engines: the
gpodder and Nextcloud APIs called as apps call them, and the Devices page read as a
person's browser reads it. Each device's last good sync (no write per request), the
last refused attempt of a device and of an app password, when, from where, by what
and why: a wrong password, a name locked out, an app password revoked."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.web.app import create_app
from podsync.web.keys import DB
from tests.conftest import PASSWORD
from tests.support.replica_http import basic_header
from tests.support.ui_session import Browser, words

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]
PHONE_APP = "AntennaPod/3.7.0"


@pytest.fixture
async def client(aiohttp_client: Any, config: Config, seeded_users: tuple[str, ...]) -> Client:
    result: Client = await aiohttp_client(create_app(config))
    return result


async def gpodder(
    client: Client, path: str, password: str, method: str = "GET", name: str = "alice"
) -> int:
    headers = {"Authorization": basic_header(name, password), "User-Agent": PHONE_APP}
    body = b"{}" if method == "POST" else None
    async with client.request(method, path, headers=headers, data=body) as answer:
        await answer.read()
        return answer.status


async def devices_page(browser: Browser) -> str:
    status, page = await browser.page("/ui/devices")
    assert status == 200, page
    return page


def card(page: str, caption: str) -> str:
    """The words of one device's card, or of one app password's entry."""
    found = re.search(
        rf"<(?:li class=\"card\"|li)>\s*<h[23]>{re.escape(html.escape(caption))}\b.*?</li>",
        page,
        re.S,
    )
    assert found is not None, page
    return words(found.group(0))


async def signed_in(client: Client) -> Browser:
    browser = Browser(str(client.make_url("")))
    await browser.sign_in("alice")
    return browser


async def test_a_wrong_password_shows_on_the_device_until_a_good_sync(client: Client) -> None:
    assert await gpodder(client, "/api/2/devices/alice/phone.json", PASSWORD, "POST") == 200
    assert await gpodder(client, "/api/2/subscriptions/alice/phone.json", "an old one") == 401
    browser = await signed_in(client)
    try:
        said = card(await devices_page(browser), "phone")
        assert re.search(
            r"Last refused Not syncing: today \d\d:\d\d from 127\.0\.0\.1 by AntennaPod/3\.7\.0: "
            r"wrong password\.",
            said,
        ), said
        # The Overview says so too, beside the device's last sync.
        _, overview = await browser.page("/ui/")
        assert re.search(
            r"phone other · last sync today \d\d:\d\d · refused today", words(overview)
        )
        # The next good sync: the refusal stays, as what happened last time.
        assert await gpodder(client, "/api/2/subscriptions/alice/phone.json", PASSWORD) == 200
        said = card(await devices_page(browser), "phone")
        assert "Not syncing" not in said and "wrong password" in said, said
        _, overview = await browser.page("/ui/")
        assert "refused" not in words(overview)
    finally:
        await browser.close()


async def test_a_good_sync_writes_at_most_once_a_minute(client: Client) -> None:
    path = "/api/2/subscriptions/alice/tablet.json"
    assert await gpodder(client, "/api/2/devices/alice/tablet.json", PASSWORD, "POST") == 200
    assert await gpodder(client, path, PASSWORD) == 200
    async with client.app[DB].write() as conn:
        await conn.execute("UPDATE gpodder_devices SET last_seen_at = 5 WHERE device_id = 'tablet'")
    for _ in range(5):  # within the minute: no write at all
        assert await gpodder(client, path, PASSWORD) == 200
    async with client.app[DB].read() as conn:
        row = await conn.fetch_one("SELECT last_seen_at FROM gpodder_devices")
    assert row is not None and int(row[0]) == 5


async def test_a_locked_out_name_is_said_on_its_devices(client: Client) -> None:
    assert await gpodder(client, "/api/2/devices/alice/phone.json", PASSWORD, "POST") == 200
    browser = await signed_in(client)  # before: a lockout refuses the sign-in form too
    try:
        for n in range(5):  # five different wrong passwords: the lockout
            assert await gpodder(client, "/api/2/devices/alice.json", f"guess {n}") == 401
        assert await gpodder(client, "/api/2/subscriptions/alice/phone.json", PASSWORD) == 429
        page = await devices_page(browser)
        said = card(page, "phone")
        assert "locked out: too many different wrong passwords for your name from there" in said
        assert 'href="/ui/#h-failures">Unlock on the Overview</a>' in page
    finally:
        await browser.close()


async def test_a_revoked_app_password_is_named_on_the_device_and_on_the_page(
    client: Client,
) -> None:
    browser = await signed_in(client)
    try:
        assert await browser.submit("/ui/account", "/ui/account/app-passwords", name="Kasts") == 200
        secret_page = await _made(browser, "Gnome Podcasts")
        secret = re.search(r'<code class="secret">([^<]+)</code>', secret_page)
        assert secret is not None, secret_page
        app = secret.group(1)
        assert await gpodder(client, "/api/2/devices/alice/laptop.json", app, "POST") == 200
        nextcloud = "/index.php/apps/gpoddersync/subscriptions"
        async with client.get(
            nextcloud, headers={"Authorization": basic_header("alice", app)}
        ) as r:
            assert r.status == 200
        page = await devices_page(browser)
        used = card(page, "Gnome Podcasts")
        assert re.search(r"Last used today \d\d:\d\d", used) and "Last refused" not in used, used
        assert "Last used never" in card(page, "Kasts")
        _, account = await browser.page("/ui/account")
        gnome = re.search(
            r'name="id" value="(\d+)">\s*<button[^>]*aria-label="Revoke Gnome Podcasts"', account
        )
        assert gnome is not None, account
        await browser.submit("/ui/account", "/ui/account/app-passwords/revoke", id=gnome.group(1))
        # The app goes on with the revoked one, through both APIs.
        assert await gpodder(client, "/api/2/subscriptions/alice/laptop.json", app) == 401
        async with client.get(
            nextcloud, headers={"Authorization": basic_header("alice", app)}
        ) as r:
            assert r.status == 401
        page = await devices_page(browser)
        laptop = card(page, "laptop")
        assert "Not syncing" in laptop and "the app password it sent was revoked" in laptop
        revoked = card(page, "Gnome Podcasts")
        assert re.search(r"\(revoked today \d\d:\d\d\)", revoked), revoked
        assert "the app password it sent was revoked" in revoked
        assert "An app still signs in with this revoked app password" in revoked
    finally:
        await browser.close()


async def _made(browser: Browser, name: str) -> str:
    """Make an app password on the Account page; the answer (its secret in it)."""
    _, page = await browser.page("/ui/account")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    async with browser.http.post(
        browser.base + "/ui/account/app-passwords",
        data={"csrf": csrf.group(1), "name": name},
        allow_redirects=False,
    ) as answer:
        assert answer.status == 200
        return await answer.text()


async def test_names_nobody_has_and_requests_without_credentials_tie_to_nothing(
    client: Client,
) -> None:
    assert await gpodder(client, "/api/2/devices/alice/phone.json", PASSWORD, "POST") == 200
    assert (
        await gpodder(client, "/api/2/subscriptions/mallory/phone.json", "x", name="mallory") == 401
    )
    client.session.cookie_jar.clear()  # no gpodder session cookie either
    async with client.get("/api/2/subscriptions/alice/phone.json") as answer:
        assert answer.status == 401  # no credentials: urllib asks first
    async with client.app[DB].read() as conn:
        row = await conn.fetch_one("SELECT count(*) FROM sync_refusals")
    assert row is not None and int(row[0]) == 0


async def test_removing_a_device_forgets_its_refusals(client: Client) -> None:
    assert await gpodder(client, "/api/2/devices/alice/phone.json", PASSWORD, "POST") == 200
    assert await gpodder(client, "/api/2/subscriptions/alice/phone.json", "wrong") == 401
    browser = await signed_in(client)
    try:
        assert (
            await browser.submit("/ui/devices", "/ui/devices/remove", device="phone", confirm="yes")
            == 303
        )
    finally:
        await browser.close()
    async with client.app[DB].read() as conn:
        row = await conn.fetch_one("SELECT count(*) FROM sync_refusals")
    assert row is not None and int(row[0]) == 0


async def test_a_guesser_with_a_new_password_each_time_writes_once_a_minute(
    client: Client,
) -> None:
    assert await gpodder(client, "/api/2/devices/alice/phone.json", PASSWORD, "POST") == 200
    path = "/api/2/subscriptions/alice/phone.json"
    assert await gpodder(client, path, "g0000-00000-00000-00000-00000-00000") == 401
    async with client.app[DB].write() as conn:
        await conn.execute("UPDATE sync_refusals SET refused_at = 5")
    for n in range(1, 4):  # app-password-shaped, each new: looked at, not written
        assert await gpodder(client, path, f"g{n:04d}-00000-00000-00000-00000-00000") == 401
    async with client.app[DB].read() as conn:
        rows = await conn.fetch_all("SELECT kind, subject, refused_at, reason FROM sync_refusals")
    assert [tuple(r) for r in rows] == [("device", "phone", 5, "password")]
