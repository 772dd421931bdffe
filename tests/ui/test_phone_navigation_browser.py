"""The navigation on a phone, in a real headless Chromium against a real `podsync
serve`: one row that scrolls sideways (eleven items took four rows above every
page), the page's own item scrolled into view by the page's script, every item
reachable without script, the desktop's rows unchanged, axe-clean; screenshots are
kept (build/screenshots/phone-nav-*)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conftest import MakeConfig, ServeProcess
from tests.support.ui_browser import (
    DESKTOP,
    PHONE,
    axe_source,
    browser,  # noqa: F401 - a fixture
    check_accessibility,
    screenshot,
    violations_text,
)
from tests.ui.test_webui_browser import sign_in

pytestmark = pytest.mark.slow

NAV = 'nav[aria-label="Main"]'
# The list's height, its rows (distinct tops of its items), how far it scrolls, and
# the current item's left and right edges in the viewport.
MEASURE = """() => {
  const list = document.querySelector('nav[aria-label="Main"] ul');
  const tops = new Set([...list.querySelectorAll('li')]
    .map(li => Math.round(li.getBoundingClientRect().top)));
  const current = list.querySelector('[aria-current="page"]').getBoundingClientRect();
  return {rows: tops.size, scrolls: list.scrollWidth > list.clientWidth,
          left: current.left, right: current.right, width: window.innerWidth};
}"""


@pytest.fixture
def server(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> Iterator[str]:
    yield serve_process(make_config()).url


def test_the_navigation_is_one_row_on_a_phone_with_the_pages_item_in_view(
    server: str,
    browser: Any,  # noqa: F811
) -> None:
    ctx = browser.new_context(viewport=PHONE)
    page = ctx.new_page()
    sign_in(page, server)
    pages = (("/ui/account", "Account"), ("/ui/devices", "Devices"), ("/ui/", "Overview"))
    for path, item in pages:
        page.goto(server + path)
        found = page.evaluate(MEASURE)
        assert found["rows"] == 1 and found["scrolls"], (path, found)
        assert found["left"] >= 0 and found["right"] <= found["width"], (path, item, found)
        screenshot(page, f"phone-nav-{item.lower()}-390")
    # Moving by the navigation itself (htmx swaps the page): the new item in view.
    page.goto(server + "/ui/")
    page.locator(NAV).get_by_role("link", name="Account", exact=True).click()
    page.wait_for_url(server + "/ui/account")
    found = page.evaluate(MEASURE)
    assert found["left"] >= 0 and found["right"] <= found["width"], found
    violations = check_accessibility(page, axe_source())
    assert not violations, violations_text(violations)
    ctx.close()


def test_without_script_every_item_is_reachable_and_the_desktop_keeps_its_rows(
    server: str,
    browser: Any,  # noqa: F811
) -> None:
    ctx = browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = ctx.new_page()
    sign_in(page, server)
    found = page.evaluate(MEASURE)
    assert found["rows"] == 1 and found["scrolls"], found
    # The last item is off to the right; the row scrolls to it and it follows.
    account = page.locator(NAV).get_by_role("link", name="Account", exact=True)
    account.scroll_into_view_if_needed()
    account.click()
    page.wait_for_url(server + "/ui/account")
    ctx.close()
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    sign_in(page, server)
    found = page.evaluate(MEASURE)
    assert not found["scrolls"] and found["rows"] <= 2, found
    screenshot(page, "phone-nav-desktop-1280")
    ctx.close()
