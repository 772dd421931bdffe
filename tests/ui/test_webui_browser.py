"""The web UI in a real headless Chromium against a real `podsync serve`: sign in
and out, every page and form with good and bad input, changes seen by an Open
Podcast API client and by gPodder's own library, a session ended from the CLI,
the admin pages, screenshots at 390 and 1280 px and axe-core on every page."""

from __future__ import annotations

import http.server
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mygpoclient import api

from podsync.config import Config
from tests.conftest import PASSWORD, ServeProcess
from tests.support.feed_site import PNG, rss
from tests.support.server_support import access_token, podsync_command, request
from tests.support.ui_browser import (
    DESKTOP,
    PHONE,
    axe_source,
    browser,  # noqa: F401 - a fixture
    check_accessibility,
    screenshot,
    violations_text,
)

pytestmark = pytest.mark.slow


def run_cli(config: Config, *args: str, input: str | None = None) -> Any:
    """The real CLI in its own process (playwright's sync API holds this thread's
    event loop, so the CLI's asyncio.run cannot run in it)."""

    class Result:
        def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
            self.exit_code = done.returncode
            self.output = done.stdout + done.stderr

    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
    done = subprocess.run(
        podsync_command(config, *args),
        input=input or "",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    return Result(done)


FEED_A = "https://feeds.example.com/alpha/rss"
FEED_B = "https://podcasts.example.org/beta.xml"


@pytest.fixture
def server(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> Iterator[str]:
    result = run_cli(config, "user", "admin", "alice")
    assert result.exit_code == 0, result.output
    yield serve_process(config).url


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:  # noqa: F811
    ctx = browser.new_context(viewport=DESKTOP)
    try:
        yield ctx
    finally:
        ctx.close()


def sign_in(page: Any, base: str, name: str = "alice", password: str = PASSWORD) -> None:
    page.goto(base + "/ui/")
    assert page.url == base + "/ui/login"
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(base + "/ui/")


def heading(page: Any) -> str:
    text: str = page.get_by_role("heading", level=1).inner_text()
    return text


def opa_feeds(base: str, name: str = "alice") -> dict[str, bool]:
    token = access_token(base, name, PASSWORD)
    status, body = request(base + "/api/v1/subscriptions?include_unsubscribed=true", token=token)
    assert status == 200, body
    return {s["feed_url"]: "unsubscribed_at" not in s for s in body["results"]}


def seed_history(base: str) -> None:
    """A gPodder client (mygpoclient) syncs a device, two feeds and some plays."""
    client = api.MygPodderClient("alice", PASSWORD, base)
    assert client.update_device_settings("phone-1", "Alice's phone", "mobile")
    client.update_subscriptions("phone-1", [FEED_A, FEED_B], [])
    actions = [
        api.EpisodeAction(
            FEED_A,
            f"https://cdn.example.com/alpha/episode-{i}.mp3",
            "play",
            "phone-1",
            f"2026-11-0{i}T10:00:00",
            started=0,
            position=600 * i,
            total=3000,
        )
        for i in range(1, 5)
    ]
    actions.append(
        api.EpisodeAction(
            FEED_B,
            "https://cdn.example.org/beta/ep1.mp3",
            "download",
            "phone-1",
            "2026-11-05T08:00:00",
        )
    )
    client.upload_episode_actions(actions)


PAGES = [
    ("/ui/", "Overview"),
    ("/ui/subscriptions", "Subscriptions"),
    ("/ui/history", "Listening history"),
    ("/ui/devices", "Devices"),
    ("/ui/transfer", "Import and export"),
    ("/ui/account", "Account"),
    ("/ui/admin/users", "Users"),
]


def test_every_page_at_both_sizes_screenshots_and_axe(server: str, browser: Any) -> None:  # noqa: F811
    seed_history(server)
    source = axe_source()
    failures = {}
    for size_name, size, scheme in (
        ("1280", DESKTOP, "light"),
        ("390", PHONE, "light"),
        ("390-dark", PHONE, "dark"),
    ):
        ctx = browser.new_context(viewport=size, color_scheme=scheme)
        page = ctx.new_page()
        page.goto(server + "/ui/login")
        screenshot(page, f"login-{size_name}")
        found = check_accessibility(page, source)
        if found:
            failures[f"login-{size_name}"] = found
        sign_in(page, server)
        for path, title in PAGES:
            page.goto(server + path)
            assert heading(page) == title
            slug = path.strip("/").replace("/", "-") or "ui"
            screenshot(page, f"{slug}-{size_name}")
            found = check_accessibility(page, source)
            if found:
                failures[f"{path} at {size_name}"] = found
            # Nothing wider than the screen: no sideways scrolling on a phone.
            width = page.evaluate("() => document.documentElement.scrollWidth")
            assert width <= size["width"], (path, size_name, width)
        ctx.close()
    assert not failures, violations_text(failures)  # type: ignore[arg-type]


def test_sign_in_with_bad_input_then_sign_out(server: str, context: Any) -> None:
    page = context.new_page()
    page.goto(server + "/ui/subscriptions")
    assert page.url == server + "/ui/login?next=/ui/subscriptions"
    page.get_by_role("button", name="Sign in").click()
    assert page.locator("#e-username").inner_text() == "Enter your username."
    assert page.locator("#e-password").inner_text() == "Enter your password."
    # By keyboard alone: the fields and the button are reachable with Tab, Enter sends.
    page.get_by_label("Username").focus()
    page.keyboard.type("alice")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "f-password"
    page.keyboard.type("not the password")
    page.keyboard.press("Enter")
    assert page.get_by_role("alert").inner_text() == "Username or password is incorrect."
    assert page.get_by_label("Username").input_value() == "alice"
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(server + "/ui/subscriptions")  # back where the person was going
    page.keyboard.press("Tab")  # the first stop: the skip link, then the page's own
    assert page.evaluate("() => document.activeElement.textContent") == "Skip to content"
    cookie = next(c for c in context.cookies() if c["name"] == "podsync_ui")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    page.get_by_role("button", name="Sign out", exact=True).click()
    page.wait_for_url(server + "/ui/login?signed_out=1")
    assert page.get_by_role("status").inner_text() == "You are signed out."
    page.goto(server + "/ui/")
    assert page.url == server + "/ui/login"


def test_throttled_sign_in_says_so(server: str, context: Any) -> None:
    page = context.new_page()
    page.goto(server + "/ui/login")
    for n in range(5):  # different ones: the same one again counts once
        page.get_by_label("Username").fill("bob")
        page.get_by_label("Password").fill(f"wrong password {n}")
        page.get_by_role("button", name="Sign in").click()
    page.get_by_label("Password").fill(PASSWORD)  # right, but locked out now
    page.get_by_role("button", name="Sign in").click()
    assert "Too many failed sign-ins" in page.get_by_role("alert").inner_text()
    assert page.url == server + "/ui/login"


def test_subscribe_in_the_browser_reaches_opa_and_gpodder_clients(
    server: str, context: Any
) -> None:
    page = context.new_page()
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    assert "No subscriptions yet" in page.locator("#count").inner_text()
    # Bad input: the form comes back with the problem next to the field, nothing saved.
    for bad, problem in (
        ("", "Enter the address of a podcast feed."),
        (
            "ftp://example.com/feed",
            "Not a web address: a feed's address starts with http:// or https://.",
        ),
        ("https://exa mple.com/feed", "The address contains a space."),
    ):
        page.get_by_label("Feed URL").fill(bad)
        page.get_by_role("button", name="Subscribe", exact=True).click()
        assert page.locator("#e-feed_url").inner_text() == problem
        assert page.get_by_label("Feed URL").input_value() == bad
    assert opa_feeds(server) == {}
    page.get_by_label("Feed URL").fill(FEED_A)
    page.get_by_role("button", name="Subscribe", exact=True).click()
    assert page.get_by_role("status").inner_text().startswith("Subscribed.")
    assert page.get_by_text("feeds.example.com/alpha/rss", exact=True).count() == 1
    page.get_by_label("Feed URL").fill(FEED_A.upper().replace("HTTPS://", "https://"))
    assert opa_feeds(server) == {FEED_A: True}
    gpodder = api.MygPodderClient("alice", PASSWORD, server)
    assert gpodder.pull_subscriptions("laptop", 0).add == [FEED_A]
    # Unsubscribe on the podcast's page (after a confirmation), see it from both
    # clients, subscribe again from the list.
    page.locator(".sub a.title").first.click()
    page.get_by_role("button", name="Unsubscribe").click()
    assert heading(page) == "Unsubscribe?"
    assert opa_feeds(server) == {FEED_A: True}  # nothing changed yet
    page.get_by_role("button", name="Unsubscribe").click()
    assert page.get_by_role("status").inner_text().startswith("Unsubscribed.")
    assert opa_feeds(server) == {FEED_A: False}
    assert gpodder.pull_subscriptions("laptop", 0).add == []
    page.goto(server + "/ui/subscriptions")
    page.get_by_label("Show unsubscribed").check()
    page.get_by_role("button", name="Search").click()
    page.get_by_role("button", name="Subscribe again").click()
    assert opa_feeds(server) == {FEED_A: True}


def test_search_the_unsubscribed_switch_and_pages(server: str, context: Any) -> None:
    feeds = [f"https://host{i:02d}.example.com/show/feed.xml" for i in range(60)]
    api.MygPodderClient("alice", PASSWORD, server).update_subscriptions("laptop", feeds, [])
    page = context.new_page()
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    assert page.locator("#count").inner_text() == "60 current subscriptions"
    assert page.locator(".sub").count() == 50
    # The pager sits above and below the list.
    assert page.get_by_role("link", name="Next →").count() == 2
    page.get_by_role("link", name="Next →").first.click()
    assert page.locator(".sub").count() == 10
    # A page number past the end goes to the last page.
    page.goto(server + "/ui/subscriptions?page=99")
    assert page.url == server + "/ui/subscriptions?page=2"
    assert page.locator(".sub").count() == 10
    assert page.get_by_text("Page 2 of 2").count() == 2
    page.get_by_label("Search by title or URL").fill("HOST07")
    page.get_by_role("button", name="Search").click()
    assert page.locator(".sub .url").all_inner_texts() == [feeds[7]]
    page.locator(".sub a.title").click()  # Unsubscribe is on the podcast's page
    page.get_by_role("button", name="Unsubscribe").click()
    page.get_by_role("button", name="Unsubscribe").click()  # the confirmation
    page.goto(server + "/ui/subscriptions?q=HOST07")
    assert page.locator(".sub").count() == 0
    page.get_by_label("Show unsubscribed").check()
    page.get_by_role("button", name="Search").click()
    assert page.locator(".sub .url").all_inner_texts() == [feeds[7]]
    assert page.get_by_role("button", name="Subscribe again").count() == 1


def test_history_with_progress_and_filters(server: str, context: Any) -> None:
    seed_history(server)
    page = context.new_page()
    sign_in(page, server)
    page.goto(server + "/ui/history")
    assert page.get_by_text("Times are in UTC.").count() == 1
    items = page.locator(".history li")
    assert items.count() == 5
    newest = items.nth(0).inner_text()
    assert "ep1.mp3" in newest and "Downloaded" in newest and "Alice's phone" in newest
    assert "2026-11-05 08:00" in newest
    played = items.nth(1).inner_text()
    assert "episode-4.mp3" in played and "40:00 of 50:00 (80%)" in played
    assert items.nth(1).locator("progress").get_attribute("value") == "2400"
    page.get_by_label("Podcast").select_option(label="podcasts.example.org/beta.xml")
    page.get_by_role("button", name="Filter").click()
    assert page.locator(".history li").count() == 1
    page.get_by_label("Podcast").select_option(label="All podcasts")
    page.get_by_label("Device").select_option(label="Alice's phone")
    page.get_by_role("button", name="Filter").click()
    assert page.locator(".history li").count() == 5


def test_devices_rename_and_remove(server: str, context: Any) -> None:
    seed_history(server)
    page = context.new_page()
    sign_in(page, server)
    page.goto(server + "/ui/devices")
    assert "creates the device again at its next sync" in page.locator("main").inner_text()
    page.get_by_label("Caption").fill("   ")
    page.get_by_role("button", name="Rename").click()
    assert page.get_by_text("A caption cannot be empty.").count() == 1
    client = api.MygPodderClient("alice", PASSWORD, server)
    assert [d.caption for d in client.get_devices()] == ["Alice's phone"]
    page.get_by_label("Caption").fill("Pixel <b>8</b>")
    page.get_by_role("button", name="Rename").click()
    assert page.get_by_role("heading", name="Pixel <b>8</b>").count() == 1
    assert [d.caption for d in client.get_devices()] == ["Pixel <b>8</b>"]
    page.get_by_role("button", name="Remove").click()
    assert heading(page) == "Remove this device?"
    assert [d.caption for d in client.get_devices()] == ["Pixel <b>8</b>"]  # not yet
    page.get_by_role("button", name="Remove").click()
    assert page.get_by_role("status").inner_text().startswith("Device removed.")
    assert client.get_devices() == []
    page.goto(server + "/ui/history")  # the history stays
    assert page.locator(".history li").count() == 5


def test_opml_upload_and_download(server: str, context: Any, tmp_path: Path) -> None:
    good = tmp_path / "mine.opml"
    good.write_text(
        '<?xml version="1.0"?><opml version="2.0"><body>'
        f'<outline type="rss" text="Alpha Show" xmlUrl="{FEED_A}"/>'
        '<outline type="rss" text="Broken" xmlUrl="ftp://nope.example.com/x"/>'
        f'<outline type="rss" text="Beta" xmlUrl="{FEED_B}"/>'
        "</body></opml>"
    )
    bad = tmp_path / "notes.txt"
    bad.write_text("this is not OPML")
    page = context.new_page()
    sign_in(page, server)
    page.goto(server + "/ui/transfer")
    page.get_by_role("button", name="Import").click()
    assert page.locator("#e-opml").inner_text() == "Choose an OPML file to import."
    page.get_by_label("OPML file", exact=True).set_input_files(str(bad))
    page.get_by_role("button", name="Import").click()
    assert "This is not an OPML file" in page.locator("#e-opml").inner_text()
    assert opa_feeds(server) == {}
    page.get_by_label("OPML file", exact=True).set_input_files(str(good))
    page.get_by_role("button", name="Import").click()
    report = page.locator(".report").inner_text()
    assert "2 added" in report and "1 skipped" in report and "ftp://nope.example.com/x" in report
    assert opa_feeds(server) == {FEED_A: True, FEED_B: True}
    page.get_by_role("button", name="Import").click()  # no file chosen this time
    page.get_by_label("OPML file", exact=True).set_input_files(str(good))
    page.get_by_role("button", name="Import").click()
    assert "2 already there" in page.locator(".report").inner_text()
    with page.expect_download() as download:
        page.get_by_role("link", name="Download OPML").click()
    saved = tmp_path / "export.opml"
    download.value.save_as(saved)
    text = saved.read_text()
    assert FEED_A in text and FEED_B in text and 'text="Alpha Show"' in text
    page.goto(server + "/ui/subscriptions")
    assert page.get_by_text("Alpha Show", exact=True).count() == 1  # the OPML title


def test_password_change_and_sign_out_everywhere(server: str, browser: Any) -> None:  # noqa: F811
    first = browser.new_context(viewport=PHONE)
    second = browser.new_context(viewport=DESKTOP)
    page, other = first.new_page(), second.new_page()
    sign_in(page, server)
    sign_in(other, server)
    page.goto(server + "/ui/account")
    for current, new, again, field, problem in (
        ("", "new password 1", "new password 1", "#e-current", "Enter your current password."),
        (PASSWORD, "short", "short", "#e-new", "Use at least 8 characters."),
        (PASSWORD, "new password 1", "new password 2", "#e-again", "The two new passwords differ."),
        (
            "wrong password",
            "new password 1",
            "new password 1",
            "#e-current",
            "This is not your current password.",
        ),
    ):
        page.get_by_label("Current password").fill(current)
        page.get_by_label("New password", exact=True).fill(new)
        page.get_by_label("New password again").fill(again)
        page.get_by_role("button", name="Change password").click()
        assert page.locator(field).inner_text() == problem
    token = access_token(server, "alice", PASSWORD)
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password", exact=True).fill("new password 1")
    page.get_by_label("New password again").fill("new password 1")
    page.get_by_role("button", name="Change password").click()
    page.wait_for_url(server + "/ui/login?changed=1")
    other.goto(server + "/ui/devices")  # the other browser's session ended too
    assert other.url.startswith(server + "/ui/login")
    assert request(server + "/api/v1/subscriptions", token=token)[0] == 401
    sign_in(page, server, password="new password 1")
    sign_in(other, server, password="new password 1")
    token = access_token(server, "alice", "new password 1")
    page.goto(server + "/ui/account")
    page.get_by_role("button", name="Sign out everywhere").click()
    page.wait_for_url(server + "/ui/login?everywhere=1")
    other.goto(server + "/ui/")
    assert other.url == server + "/ui/login"
    assert request(server + "/api/v1/subscriptions", token=token)[0] == 401
    first.close()
    second.close()


def test_a_session_ended_by_the_cli(server: str, config: Config, context: Any) -> None:
    page = context.new_page()
    sign_in(page, server, "bob")
    page.goto(server + "/ui/subscriptions")
    assert heading(page) == "Subscriptions"
    result = run_cli(config, "user", "passwd", "bob", "--password-stdin", input="another one 9\n")
    assert result.exit_code == 0, result.output
    page.reload()
    assert page.url == server + "/ui/login?next=/ui/subscriptions"
    sign_in(page, server, "bob", "another one 9")
    result = run_cli(config, "user", "logout", "bob")
    assert result.exit_code == 0, result.output
    page.goto(server + "/ui/devices")
    assert page.url.startswith(server + "/ui/login")


def _post(url: str, data: bytes, headers: dict[str, str]) -> tuple[int, str]:
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(req, timeout=10) as response:  # noqa: S310 - loopback
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode()


def test_csrf_a_foreign_origin_or_no_token_is_403_and_changes_nothing(
    server: str, context: Any
) -> None:
    page = context.new_page()
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    session = next(c["value"] for c in context.cookies() if c["name"] == "podsync_ui")
    form = "application/x-www-form-urlencoded"
    cookie = f"podsync_ui={session}"
    body = f"csrf={token}&feed_url=https%3A%2F%2Fevil.example.com%2Ffeed".encode()
    cases = [
        ({"Origin": "https://evil.example.com"}, body),
        ({"Origin": "null"}, body),
        ({"Origin": server}, b"feed_url=https%3A%2F%2Fevil.example.com%2Ffeed"),
        ({"Origin": server}, b"csrf=forged&feed_url=https%3A%2F%2Fevil.example.com%2Ffeed"),
    ]
    for extra, data in cases:
        status, text = _post(
            server + "/ui/subscriptions", data, {"Content-Type": form, "Cookie": cookie, **extra}
        )
        assert status == 403, (extra, status)
        assert "Nothing was changed" in text
    assert opa_feeds(server) == {}
    # The same form from the page itself works.
    status, _ = _post(
        server + "/ui/subscriptions",
        body,
        {"Content-Type": form, "Cookie": cookie, "Origin": server},
    )
    assert status == 200  # followed the 303 to the list
    assert opa_feeds(server) == {"https://evil.example.com/feed": True}


def test_admin_users_page_and_a_non_admin_refused(
    server: str,
    browser: Any,  # noqa: F811 - the fixture
    config: Config,
) -> None:
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    sign_in(page, server)
    page.goto(server + "/ui/admin/users")
    rows = page.locator("table.users tbody tr")
    assert rows.count() == 3
    assert "admin" in rows.nth(0).inner_text()
    # Add: bad input first.
    page.get_by_label("Username").fill("no spaces allowed")
    page.get_by_label("Password").fill("short")
    page.get_by_role("button", name="Add user").click()
    assert page.locator("#e-name").inner_text().startswith("Use 1 to 64 characters")
    assert "at least 8" in page.locator("#e-password").inner_text()
    page.get_by_label("Username").fill("Bob")
    page.get_by_label("Password").fill("long enough 1")
    page.get_by_role("button", name="Add user").click()
    assert "already exists" in page.locator("#e-name").inner_text()
    page.get_by_label("Username").fill("dave")
    page.get_by_label("Password").fill("long enough 1")
    page.get_by_role("button", name="Add user").click()
    assert page.get_by_role("status").inner_text() == "User added."
    assert access_token(server, "dave", "long enough 1")
    # A non-admin (dave, in another browser) is refused the admin pages.
    other = browser.new_context(viewport=PHONE)
    dave = other.new_page()
    sign_in(dave, server, "dave", "long enough 1")
    assert dave.get_by_role("link", name="Users").count() == 0
    response = dave.goto(server + "/ui/admin/users")
    assert response is not None and response.status == 403
    assert heading(dave) == "Admins only"
    # Disable ends dave's session; enable, reset the password, unlock, delete.
    page.get_by_role("link", name="dave").click()
    page.get_by_role("button", name="Disable").click()
    assert page.get_by_role("status").inner_text().startswith("User disabled")
    dave.goto(server + "/ui/")
    assert dave.url == server + "/ui/login"
    page.get_by_role("button", name="Enable").click()
    page.get_by_label("New password").fill("x")
    page.get_by_role("button", name="Reset password").click()
    assert "at least 8" in page.locator("#e-password").inner_text()
    page.get_by_label("New password").fill("reset by admin")
    page.get_by_role("button", name="Reset password").click()
    assert access_token(server, "dave", "reset by admin")
    page.get_by_role("button", name="Unlock").click()
    assert page.get_by_role("status").inner_text().startswith("Failed sign-ins")
    page.get_by_label("Type the username to confirm").fill("dav")
    page.get_by_role("button", name="Delete user").click()
    assert page.locator("#e-confirm").inner_text() == "Type dave exactly to delete this user."
    assert "dave" in run_cli(config, "user", "list").output
    page.get_by_label("Type the username to confirm").fill("dave")
    page.get_by_role("button", name="Delete user").click()
    assert page.get_by_role("status").inner_text() == "User deleted."
    assert "dave" not in run_cli(config, "user", "list").output
    log = Path(config.database.path).parent
    text = "".join(p.read_text() for p in log.glob("serve-*.log"))
    assert re.search(r"WARNING.*admin alice disabled user dave", text), text[-2000:]
    assert re.search(r"WARNING.*admin alice deleted user dave", text)
    ctx.close()
    other.close()


class _Feeds(http.server.BaseHTTPRequestHandler):
    """A podcast host on 127.0.0.1 for the feed fetcher: one feed with its artwork on
    plain http, one feed missing."""

    def do_GET(self) -> None:
        if self.path in ("/show.xml", "/art.png"):
            art = f"http://127.0.0.1:{self.server.server_address[1]}/art.png"
            kind, body = (
                ("application/rss+xml", rss("The Show", episodes=3, artwork=art))
                if self.path == "/show.xml"
                else ("image/png", PNG)
            )
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_error(404)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_titles_artwork_and_episode_titles_from_the_feed_fetcher(
    make_config: Any,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
    context: Any,
    tmp_path: Path,
) -> None:
    host = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Feeds)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{host.server_address[1]}"
        config = make_config(feeds={"fetch_metadata": True, "allow_private": True})
        opml = tmp_path / "feeds.opml"
        opml.write_text(
            '<opml version="2.0"><body>'
            f'<outline type="rss" xmlUrl="{base}/show.xml"/>'
            f'<outline type="rss" xmlUrl="{base}/gone.xml"/></body></opml>'
        )
        result = run_cli(config, "opml", "import", "alice", str(opml))
        assert result.exit_code == 0, result.output
        server = serve_process(config).url
        client = api.MygPodderClient("alice", PASSWORD, server)
        client.upload_episode_actions(
            [
                api.EpisodeAction(
                    f"{base}/show.xml",
                    "https://cdn.show.example/2.mp3",
                    "play",
                    "phone",
                    "2026-11-01T10:00:00",
                    started=0,
                    position=60,
                    total=120,
                )
            ]
        )
        page = context.new_page()
        sign_in(page, server)
        deadline = time.monotonic() + 60
        while True:
            page.goto(server + "/ui/subscriptions")
            text = page.locator(".subs").inner_text()
            if "The Show" in text:
                break
            assert time.monotonic() < deadline, text
            time.sleep(0.5)
        shown = page.locator(".sub", has_text="The Show")
        # Its http:// artwork, kept by podsync and loaded from podsync's own address.
        assert shown.locator("img").get_attribute("src").startswith("/ui/artwork/")
        assert (
            shown.get_by_role("link", name="The Show")
            .get_attribute("href")
            .startswith("/ui/podcasts/")
        )
        screenshot(page, "subscriptions-with-titles-1280")
        # A failing feed is quiet in the list: its URL, no error; its page says why.
        gone = page.locator(".sub", has_text="gone.xml")
        assert "HTTP 404" not in gone.inner_text()
        gone.get_by_role("link").click()
        deadline = time.monotonic() + 60
        while "the last try failed: HTTP 404" not in page.locator("main").inner_text():
            assert time.monotonic() < deadline
            time.sleep(0.5)
            page.reload()
        assert "Next try" in page.locator("main").inner_text()
        page.goto(server + "/ui/subscriptions")
        page.get_by_label("Search by title or URL").fill("the show")
        page.get_by_role("button", name="Search").click()
        assert page.locator(".sub .title").all_inner_texts() == ["The Show"]
        page.goto(server + "/ui/history")
        item = page.locator(".history li").first.inner_text()
        assert "Episode 2: a conversation about things" in item and "The Show" in item
        screenshot(page, "history-with-titles-1280")
    finally:
        host.shutdown()
        host.server_close()
