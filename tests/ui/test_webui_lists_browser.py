"""New episodes, Up next and staying in place, in a real headless Chromium against a
real `podsync serve`, with a feed and its files on 127.0.0.1 whose episodes were
published after the person subscribed:

- without script, every form works and comes back to the row it was sent from
  (the address ends with the row's anchor, and the row is in view);
- with script, a row of Up next is dragged to a new place, and the order is kept
  on the server;
- the navigation counts New episodes;
- New episodes, Up next, a podcast's page and search (a podcast's title, words of
  show notes) are axe-clean at 390 and 1280 px in light and dark; screenshots are
  kept (build/screenshots/lists-*)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from email.utils import formatdate
from typing import Any

import pytest

from podsync.config import Config
from tests.conftest import MakeConfig, ServeProcess
from tests.support.gpodder_support import basic, call
from tests.support.media_host import MediaHost
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

EPISODES = [("The tide tables", 60), ("Harbour lights", 120), ("Salt and rope", 90)]
_DATE = re.compile(rb"<pubDate>[^<]*</pubDate>")


class NewEpisodesHost(MediaHost):
    """The feed of MediaHost, its episodes dated in the coming hours (published
    after any subscription the test makes), newest first."""

    def feed(self) -> bytes:
        dates = iter(range(len(self.episodes), 0, -1))
        now = time.time()

        def dated(_: re.Match[bytes]) -> bytes:
            when = formatdate(now + 3600 * next(dates), usegmt=True)
            return f"<pubDate>{when}</pubDate>".encode()

        return _DATE.sub(dated, super().feed())


@pytest.fixture
def media() -> Iterator[MediaHost]:
    host = NewEpisodesHost("Sea Stories", EPISODES)
    yield host
    host.close()


@pytest.fixture
def served(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> Iterator[tuple[str, Config]]:
    config = make_config(feeds={"allow_private": True})
    yield serve_process(config).url, config


def subscribed(page: Any, server: str, media: MediaHost) -> None:
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    page.get_by_label("Feed URL").fill(media.url("/show.xml"))
    page.get_by_role("button", name="Subscribe", exact=True).click()
    assert page.get_by_role("status").inner_text().startswith("Subscribed.")


def titles(page: Any) -> list[str]:
    found: list[str] = page.locator("a.episode").all_inner_texts()
    return found


def test_without_script_every_form_comes_back_to_its_row(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = ctx.new_page()
    subscribed(page, server, media)
    new_link = page.get_by_role("navigation", name="Main").get_by_role(
        "link", name=re.compile("^New episodes")
    )
    assert new_link.inner_text().split() == ["New", "episodes", "3", "new"]
    new_link.click()
    assert titles(page) == ["The tide tables", "Harbour lights", "Salt and rope"]
    # A play link for the player, which without script opens the episode's page.
    play = page.get_by_role("link", name=re.compile(r"^Play\W+Harbour lights$"))
    assert play.get_attribute("data-play") and play.get_attribute("href", timeout=1000)
    row = page.locator("li", has=page.get_by_role("link", name="Harbour lights", exact=True))
    anchor = row.get_attribute("id")
    page.get_by_role("button", name=re.compile(r"^Add to Up next\W+Harbour lights$")).click()
    assert page.url.endswith(f"#{anchor}") and "done=queued" in page.url
    assert "Added to Up next." in page.locator(".notice").inner_text()
    assert "In Up next" in page.locator(f"#{anchor}").inner_text()
    page.get_by_role("button", name=re.compile(r"^Add to Up next\W+The tide tables$")).click()
    page.get_by_role("button", name=re.compile(r"^Dismiss\W+Salt and rope$")).click()
    assert titles(page) == ["The tide tables", "Harbour lights"]
    assert page.get_by_role("navigation", name="Main").get_by_role(
        "link", name=re.compile("^New episodes")
    ).inner_text().split() == ["New", "episodes", "2", "new"]
    # Up next: reorder with buttons, back to the row moved.
    page.get_by_role("link", name="Up next", exact=True).click()
    assert titles(page) == ["Harbour lights", "The tide tables"]
    assert "Up next in this browser and on podsync" in page.inner_text("main")
    page.get_by_role("button", name=re.compile(r"^Move up\W+The tide tables$")).click()
    assert titles(page) == ["The tide tables", "Harbour lights"]
    assert page.url.endswith(
        "#" + page.locator("li", has_text="The tide tables").first.get_attribute("id")
    )
    page.get_by_role("button", name=re.compile(r"^Remove\W+The tide tables$")).click()
    assert titles(page) == ["Harbour lights"]
    # A podcast page: bulk mark of the chosen (check boxes), back to the page.
    page.goto(server + "/ui/subscriptions")
    page.get_by_role("link", name="Sea Stories").click()
    page.get_by_label("Choose Salt and rope").check()
    page.get_by_label("Choose The tide tables").check()
    page.get_by_role("button", name="Mark the chosen played").click()
    assert "2 marked played" in page.locator(".notice").inner_text()
    assert "Finished (2)" in page.inner_text("main")
    ctx.close()


def test_with_script_a_form_swapped_in_by_htmx_comes_back_to_its_row(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    """Pages swapped in by htmx lose the redirect's "#row" on the way; the player's
    script brings the person back to the row all the same."""
    server, _ = served
    ctx = browser.new_context(boosted=True, viewport=PHONE)
    page = ctx.new_page()
    subscribed(page, server, media)
    page.goto(server + "/ui/new")
    row = page.locator("li", has=page.get_by_role("link", name="Harbour lights", exact=True))
    anchor = row.get_attribute("id")
    page.get_by_role("button", name=re.compile(r"^Add to Up next\W+Harbour lights$")).click()
    deadline = time.monotonic() + 10
    while page.evaluate("() => location.hash") != f"#{anchor}":
        assert time.monotonic() < deadline, page.url
        time.sleep(0.1)
    assert "In Up next" in page.locator(f"#{anchor}").inner_text()
    assert page.evaluate(f"document.getElementById('{anchor}').getBoundingClientRect().top") >= 0
    ctx.close()


def test_with_script_a_row_of_up_next_is_dragged_and_the_order_kept(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    subscribed(page, server, media)
    page.goto(server + "/ui/new")
    for title in ("Salt and rope", "Harbour lights", "The tide tables"):
        page.get_by_role("button", name=re.compile(rf"^Add to Up next\W+{title}$")).click()
    page.goto(server + "/ui/up-next")
    assert titles(page) == ["Salt and rope", "Harbour lights", "The tide tables"]
    assert page.locator(".drag-hint").is_visible()  # the script runs
    rows = page.locator("ol.queue > li")
    with page.expect_response(lambda r: r.url.endswith("/ui/up-next/move")) as moved:
        rows.nth(2).drag_to(rows.nth(0), target_position={"x": 20, "y": 5})
    assert moved.value.status == 200
    assert titles(page) == ["The tide tables", "Salt and rope", "Harbour lights"]
    page.reload()
    assert titles(page) == ["The tide tables", "Salt and rope", "Harbour lights"]
    ctx.close()


def _new(page: Any, server: str) -> None:
    page.goto(server + "/ui/new")
    assert titles(page)


def _up_next(page: Any, server: str) -> None:
    page.goto(server + "/ui/up-next")
    assert titles(page) == ["Harbour lights"]


def _podcast(page: Any, server: str) -> None:
    page.goto(server + "/ui/subscriptions")
    page.get_by_role("link", name="Sea Stories").click()
    assert "A show" in page.inner_text("main")  # the feed's description


def _search(page: Any, server: str) -> None:
    page.goto(server + "/ui/search?q=sea")
    assert page.locator("a.podcast-found").all_inner_texts() == ["Sea Stories"]
    page.goto(server + "/ui/search?q=notes+harbour")  # words of the show notes
    assert titles(page) == ["Harbour lights"]


PAGES: list[tuple[str, Callable[[Any, str], None]]] = [
    ("new", _new),
    ("up-next", _up_next),
    ("podcast", _podcast),
    ("search", _search),
]


def test_the_lists_at_both_sizes_light_and_dark_axe_and_screenshots(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    setup = browser.new_context(viewport=DESKTOP)
    page = setup.new_page()
    subscribed(page, server, media)
    page.goto(server + "/ui/new")
    page.get_by_role("button", name=re.compile(r"^Add to Up next\W+Harbour lights$")).click()
    setup.close()
    source = axe_source()
    failures: dict[str, Any] = {}
    for size_name, size in (("390", PHONE), ("1280", DESKTOP)):
        for scheme in ("light", "dark"):
            ctx = browser.new_context(viewport=size, color_scheme=scheme)
            page = ctx.new_page()
            sign_in(page, server)
            for name, go in PAGES:
                go(page, server)
                label = f"lists-{name}-{size_name}-{scheme}"
                screenshot(page, label)
                found = check_accessibility(page, source)
                if found:
                    failures[label] = found
                width = page.evaluate("() => document.documentElement.scrollWidth")
                assert width <= size["width"], (label, width)
            ctx.close()
    assert not failures, violations_text(failures)  # type: ignore[arg-type]


# Each word of the elements' text on one line: a word broken mid-word has two boxes.
_BROKEN_WORDS = """(selector) => {
  const broken = [];
  for (const element of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.textContent.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (lines.size > 1) broken.push(match[0]);
      }
    }
  }
  return broken;
}"""


def test_statistics_at_390_px_break_no_word(
    served: tuple[str, Config],
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    host = NewEpisodesHost("Philosophy Bites Back Extraordinarily", EPISODES)
    try:
        ctx = browser.new_context(viewport=PHONE)
        page = ctx.new_page()
        subscribed(page, server, host)
        played = [{"podcast": host.url("/show.xml"), "episode": host.url("/2.wav"),
                   "action": "play", "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"),
                   "started": 0, "position": 100, "total": 120, "device": "phone"}]  # fmt: skip
        sent = call(server, "POST", "/api/2/episodes/alice.json", json.dumps(played).encode(),
                    **basic())  # fmt: skip
        assert sent.status == 200
        page.goto(server + "/ui/stats")
        assert "Philosophy Bites Back" in page.inner_text("main")
        assert page.evaluate(_BROKEN_WORDS, ".bars .label, h1, h2") == []
        screenshot(page, "lists-stats-390")
        ctx.close()
    finally:
        host.close()
