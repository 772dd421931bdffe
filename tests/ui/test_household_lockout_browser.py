"""The lockout as people see it, in a real Chromium against a real `podsync serve`
(contract rev. 5): a person signed in to the web UI sees on the Overview that their
name is locked out from an address, until when and why, and unlocks it; the admin's
user page shows a user's failed sign-ins and Unlock. Both pages pass axe-core at
phone and desktop sizes and are kept as screenshots."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from podsync.config import Config
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.gpodder_support import call
from tests.support.ui_browser import (
    DESKTOP,
    PHONE,
    axe_source,
    browser,  # noqa: F401 - a fixture
    check_accessibility,
    screenshot,
    violations_text,
)
from tests.ui.test_webui_browser import run_cli, sign_in

pytestmark = pytest.mark.slow
HOME = {"X-Forwarded-For": "203.0.113.5"}  # the household's address, through the proxy
GUESSER = {**HOME, "User-Agent": "curl/8.5.0", "Content-Type": "application/json"}


def right(name: str) -> dict[str, str]:
    """Basic with the right password, from the household's address."""
    token = base64.b64encode(f"{name}:{PASSWORD}".encode()).decode()
    return {**HOME, "Authorization": f"Basic {token}"}


@pytest.fixture
def server(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> Iterator[tuple[Config, str]]:
    config = make_config(server={"trusted_proxies": ["127.0.0.1"]})
    result = run_cli(config, "user", "admin", "alice")
    assert result.exit_code == 0, result.output
    yield config, serve_process(config).url


def lock_out(base: str, name: str) -> None:
    """A phone at home repeats an old password (once in the count), then someone
    there tries four more: five different wrong passwords, the lockout."""
    stale = base64.b64encode(f"{name}:the old password".encode()).decode()
    phone = {**HOME, "Authorization": f"Basic {stale}", "User-Agent": "AntennaPod/3.7.0"}
    for _ in range(6):
        assert call(base, "GET", f"/api/2/devices/{name}.json", **phone).status == 401
    for n in range(4):
        guess = b'{"username": "%s", "password": "guess %d"}' % (name.encode(), n)
        login = call(base, "POST", "/auth/login", guess, **GUESSER)
        assert login.status == 401
    assert call(base, "GET", f"/api/2/devices/{name}.json", **right(name)).status == 429


def test_a_person_sees_the_lockout_on_the_overview_and_unlocks(
    server: tuple[Config, str],
    browser: Any,  # noqa: F811
) -> None:
    _config, base = server
    source = axe_source()
    failures = {}
    for size_name, size in (("1280", DESKTOP), ("390", PHONE)):
        ctx = browser.new_context(viewport=size)
        page = ctx.new_page()
        sign_in(page, base, "bob")
        lock_out(base, "bob")
        page.goto(base + "/ui/")
        card = page.get_by_role("region", name="Failed sign-ins")
        said = card.locator("p.warn").inner_text()
        assert re.fullmatch(
            r"Your name is locked out from address 203\.0\.113\.5 until (?:today|tomorrow) "
            r"\d\d:\d\d: 5 different wrong passwords were tried for it from there within "
            r"15 minutes\. Until then every app and browser at that address is refused as "
            r"bob, even with the right password\.",
            said,
        ), said
        row = card.get_by_role("row", name=re.compile("203.0.113.5"))
        cells = [c.strip() for c in row.get_by_role("cell").all_inner_texts()]
        assert cells[0] == "5 different, 10 tries", cells
        assert re.fullmatch(
            r"(?:today|yesterday) \d\d:\d\d by curl/8\.5\.0 \(Open Podcast API\): wrong password",
            cells[1],
        ), cells
        screenshot(page, f"overview-locked-out-{size_name}")
        found = check_accessibility(page, source)
        if found:
            failures[f"overview at {size_name}"] = found
        page.get_by_role("button", name="Unlock my name").click()
        page.wait_for_url(base + "/ui/?done=unlocked")
        assert page.get_by_role("status").inner_text() == (
            "Unlocked: every app and browser may sign in as you again."
        )
        assert page.get_by_role("region", name="Failed sign-ins").count() == 0
        assert call(base, "GET", "/api/2/devices/bob.json", **right("bob")).status == 200
        ctx.close()
    assert not failures, violations_text(failures)  # type: ignore[arg-type]


def test_the_admin_sees_a_users_failures_and_unlocks(
    server: tuple[Config, str],
    browser: Any,  # noqa: F811
) -> None:
    _config, base = server
    lock_out(base, "carol")
    ctx = browser.new_context(viewport=PHONE)
    page = ctx.new_page()
    sign_in(page, base)
    page.goto(base + "/ui/admin/user?name=carol")
    facts = page.locator("dl.facts").inner_text()
    assert re.search(r"locked out from 203\.0\.113\.5 until (?:today|tomorrow) \d\d:\d\d", facts)
    table = page.get_by_role("table", name=re.compile("Failed sign-ins in the last 15 minutes"))
    assert "203.0.113.5" in table.inner_text()
    screenshot(page, "admin-user-locked-out-390")
    found = check_accessibility(page, axe_source())
    assert not found, violations_text(found)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"], width
    page.get_by_role("button", name="Unlock").click()
    assert page.get_by_role("status").inner_text() == "Failed sign-ins of the user forgotten."
    assert "not locked out" in page.locator("dl.facts").inner_text()
    ctx.close()
