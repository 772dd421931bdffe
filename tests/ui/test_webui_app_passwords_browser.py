"""The Account page's App passwords in a real headless Chromium against a real
`podsync serve`: make one, gPodder's own library (mygpoclient) syncs with it, a
reload never shows it again, the sign-in form refuses it, revoke after the question
ends it; screenshots at 390 and 1280 px and axe-core on each new page."""

from __future__ import annotations

import re
import urllib.error
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mygpoclient import api, http

from podsync.config import Config
from tests.conftest import ServeProcess
from tests.support.ui_browser import (
    DESKTOP,
    PHONE,
    axe_source,
    browser,  # noqa: F401 - a fixture
    check_accessibility,
    screenshot,
    violations_text,
)
from tests.ui.test_webui_browser import heading, sign_in

pytestmark = pytest.mark.slow
FEED = "https://feeds.example.com/alpha/rss"
SHAPE = re.compile(r"[0-9a-z]{5}(-[0-9a-z]{5}){5}")


@pytest.fixture
def server(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> Iterator[str]:
    yield serve_process(config).url


def gpodder_syncs(base: str, password: str) -> bool:
    """Whether gPodder's own client library can sync with these credentials."""
    client = api.MygPodderClient("alice", password, base)
    try:
        client.update_subscriptions("laptop", [FEED], [])
        return FEED in client.get_subscriptions("laptop")
    except (urllib.error.HTTPError, http.Unauthorized):
        return False


def check_page(page: Any, source: str, name: str) -> None:
    for size_name, size in (("390", PHONE), ("1280", DESKTOP)):
        page.set_viewport_size(size)
        screenshot(page, f"{name}-{size_name}")
        found = check_accessibility(page, source)
        assert found == [], f"{name} at {size_name}: {violations_text(found)}"
    page.set_viewport_size(DESKTOP)


def test_make_use_reload_refuse_and_revoke_an_app_password(
    server: str,
    browser: Any,  # noqa: F811
) -> None:
    source = axe_source()
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        sign_in(page, server)
        page.goto(server + "/ui/account")
        section = page.get_by_role("region", name="App passwords")
        assert section.get_by_text("No app passwords yet.").is_visible()

        # A name the rules refuse is named next to the field.
        section.get_by_label("Name").fill("   ")
        section.get_by_role("button", name="Create app password").click()
        assert "Give the app password a name" in page.locator("#e-name").inner_text()

        page.get_by_label("Name").fill("Kasts on the laptop")
        page.get_by_role("button", name="Create app password").click()
        secret = page.locator("code.secret").inner_text()
        assert SHAPE.fullmatch(secret)
        assert secret not in page.url
        check_page(page, source, "account-app-password-made")
        assert gpodder_syncs(server, secret)

        # Reloading the answer sends the form again: the name is taken, no secret.
        page.reload()
        assert page.locator("code.secret").count() == 0
        assert secret not in page.content()
        page.goto(server + "/ui/account")
        assert secret not in page.content()
        row = page.get_by_role("row", name=re.compile("Kasts on the laptop"))
        assert "never" not in row.inner_text()  # gPodder used it just now
        check_page(page, source, "account-app-passwords")

        # The sign-in form never takes it.
        other = browser.new_context(viewport=DESKTOP).new_page()
        other.goto(server + "/ui/login")
        other.get_by_label("Username").fill("alice")
        other.get_by_label("Password").fill(secret)
        other.get_by_role("button", name="Sign in").click()
        assert "Username or password is incorrect." in other.content()
        other.context.close()

        # Revoke: a question first, Cancel keeps it, Revoke ends it.
        page.get_by_role("button", name="Revoke Kasts on the laptop").click()
        assert heading(page) == "Revoke app password"
        check_page(page, source, "app-password-revoke")
        page.get_by_role("link", name="Cancel").click()
        assert gpodder_syncs(server, secret)
        page.get_by_role("button", name="Revoke Kasts on the laptop").click()
        page.get_by_role("button", name="Revoke", exact=True).click()
        page.wait_for_url(server + "/ui/account?done=revoked")
        assert page.get_by_role("status").inner_text().startswith("App password revoked.")
        assert not gpodder_syncs(server, secret)
    finally:
        context.close()
