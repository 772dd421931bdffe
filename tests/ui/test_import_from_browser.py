"""The "Import from another server" form in a real headless Chromium against a real
`podsync serve`: a wrong password shown at its field, an import that runs on the
server and whose report survives a reload without importing again, axe-core on the
page with the report and on the page of an import still running."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from podsync.config import Config
from tests.conftest import MakeConfig, ServeProcess
from tests.support.hostile_remotes import Trickle
from tests.support.remote_peers import REMOTE_PASSWORD, FlakyGpodder, stored_actions
from tests.support.ui_browser import (
    DESKTOP,
    axe_source,
    browser,  # noqa: F401 - a fixture
    check_accessibility,
    screenshot,
    violations_text,
)
from tests.ui.test_webui_browser import sign_in

pytestmark = pytest.mark.slow


@pytest.fixture
def config(make_config: MakeConfig) -> Config:
    return make_config(feeds={"allow_private": True})  # the remote is on 127.0.0.1


@pytest.fixture
def server(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> Iterator[str]:
    yield serve_process(config).url


def fill(page: Any, base: str, password: str) -> None:
    page.get_by_label("Server address").fill(base)
    page.get_by_label("User name on that server").fill("remote")
    page.get_by_label("Password on that server").fill(password)
    page.get_by_role("button", name="Copy from that server").click()


def test_import_from_another_server_in_a_browser(
    server: str,
    config: Config,
    browser: Any,  # noqa: F811
) -> None:
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        sign_in(page, server)
        page.goto(server + "/ui/transfer")
        with FlakyGpodder(count=40, page=10, fail_at=None) as remote:
            fill(page, remote.base, "not the password")
            problem = page.locator("#e-remote_password").inner_text()
            assert "That server refused this user name and password" in problem
            assert page.get_by_label("Server address").input_value() == remote.base
            assert page.get_by_label("Password on that server").input_value() == ""
            assert stored_actions(config.database.path, "alice") == set()
            fill(page, remote.base, REMOTE_PASSWORD)
            page.wait_for_url(f"{server}/ui/transfer?import=*")
            for _ in range(100):  # the import runs on the server; reload to follow it
                if "Import report" in page.locator(".report").inner_text():
                    break
                page.wait_for_timeout(100)
                page.reload()
            report = page.locator(".report").inner_text()
            assert "Episode actions: 40 added, 0 already there, 0 skipped." in report
            calls = len(remote.calls)
            page.reload()
            assert "40 added" in page.locator(".report").inner_text()
            assert len(remote.calls) == calls  # the reload imported nothing
        assert len(stored_actions(config.database.path, "alice")) == 40
        found = check_accessibility(page, axe_source())
        assert found == [], violations_text(found)
        screenshot(page, "transfer-import-from-report")
    finally:
        context.close()


def test_an_import_running_on_the_server_is_shown_and_cancelled_in_a_browser(
    server: str,
    config: Config,
    browser: Any,  # noqa: F811
) -> None:
    context = browser.new_context(viewport=DESKTOP)
    try:
        page = context.new_page()
        sign_in(page, server)
        page.goto(server + "/ui/transfer")
        with Trickle() as remote:
            fill(page, remote.base, REMOTE_PASSWORD)
            page.wait_for_url(f"{server}/ui/transfer?import=*")
            assert page.get_by_role("heading", name="Import running").is_visible()
            found = check_accessibility(page, axe_source())
            assert found == [], violations_text(found)
            screenshot(page, "transfer-import-from-running")
            page.get_by_role("button", name="Cancel the import").click()
            for _ in range(100):
                if "Import stopped half way" in page.locator(".report").inner_text():
                    break
                page.wait_for_timeout(100)
                page.get_by_role("link", name="Show progress").click()
            report = page.locator(".report").inner_text()
        assert "cancelled on the Import and export page" in report
    finally:
        context.close()
