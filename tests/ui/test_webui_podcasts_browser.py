"""The web UI's second release in a real headless Chromium against a real `podsync
serve` with the feed fetcher at its default (on), feeds served on 127.0.0.1
(`allow_private = true`), and data pushed through the apps' APIs (gPodder's own
library): names at once after a subscribe, what is not a feed refused before the
apps see it, a page per podcast with each episode's state, Continue listening,
Refresh, the sorts, the confirmation steps, the import report by feed after a
redirect, the wording fixes, the phone layout; axe-core on every new page at 390 and
1280 px, light and dark, with screenshots kept."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mygpoclient import api

from podsync.config import Config
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.feed_site import PNG, ThreadedFeedHost, rss
from tests.support.ui_browser import (
    DESKTOP,
    PHONE,
    axe_source,
    browser,  # noqa: F401 - a fixture
    check_accessibility,
    screenshot,
    violations_text,
)
from tests.ui.test_webui_browser import heading, opa_feeds, run_cli, sign_in

pytestmark = pytest.mark.slow

RSS = "application/rss+xml"
# Artwork on an address that answers nothing: the browser reaches for no public host.
SHOW = rss("The Show", episodes=5, artwork="https://127.0.0.1:1/art.jpg")
OTHER = rss("Another Show", episodes=3, artwork=None, prefix="Chapter")
LONG = rss("A Long Show", episodes=120, artwork=None)


@pytest.fixture
def feeds() -> Iterator[ThreadedFeedHost]:
    host = ThreadedFeedHost(
        {
            "/show.xml": (200, RSS, SHOW),
            "/other.xml": (200, RSS, OTHER),
            "/long.xml": (200, RSS, LONG),
            "/page.html": (200, "text/html", b"<!doctype html><title>Our site</title><p>Hi"),
            "/cover.png": (200, "image/png", PNG),
        }
    )
    yield host
    host.close()


@pytest.fixture
def served(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> Iterator[tuple[str, Config]]:
    config = make_config(feeds={"allow_private": True})  # fetch_metadata at its default
    assert config.feeds.fetch_metadata is True
    result = run_cli(config, "user", "admin", "alice")
    assert result.exit_code == 0, result.output
    yield serve_process(config).url, config


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:  # noqa: F811
    ctx = browser.new_context(viewport=DESKTOP)
    try:
        yield ctx.new_page()
    finally:
        ctx.close()


def subscribe(page: Any, address: str) -> None:
    page.get_by_label("Feed URL").fill(address)
    page.get_by_role("button", name="Subscribe", exact=True).click()


def seed_listening(server: str, feeds: ThreadedFeedHost) -> None:
    """Two devices of gPodder's library sync plays, downloads and a delete; the tablet
    uploads a backlog last (an old play of an episode the phone played since)."""
    show = feeds.url("/show.xml")
    client = api.MygPodderClient("alice", PASSWORD, server)
    assert client.update_device_settings("phone-1", "Pixel", "mobile")
    assert client.update_device_settings("tablet-1", "Tablet", "mobile")
    client.update_subscriptions("phone-1", [feeds.url("/other.xml")], [])

    def action(n: int, kind: str, device: str, when: str, position: int = 0) -> Any:
        extra = {"started": 0, "position": position, "total": 3000} if kind == "play" else {}
        return api.EpisodeAction(
            show, f"https://cdn.show.example/{n}.mp3", kind, device, when, **extra
        )

    client.upload_episode_actions(
        [
            action(5, "play", "phone-1", "2026-11-10T08:00:00", 600),
            action(4, "play", "tablet-1", "2026-11-09T08:00:00", 2990),
            action(3, "download", "phone-1", "2026-11-08T08:00:00"),
            action(2, "download", "phone-1", "2026-11-07T08:00:00"),
            action(2, "delete", "phone-1", "2026-11-07T09:00:00"),
        ]
    )
    client.upload_episode_actions([action(5, "play", "tablet-1", "2026-11-01T08:00:00", 100)])


def test_a_subscribe_checks_the_feed_first_and_shows_its_name_at_once(
    served: tuple[str, Config], feeds: ThreadedFeedHost, page: Any
) -> None:
    server, _ = served
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    # Not feeds: refused with the reason, and nothing reaches the apps.
    for path, reason in (
        ("/page.html", "the answer is not an RSS or Atom feed (it is text/html)"),
        ("/cover.png", "(it is image/png)"),
        ("/missing.xml", "the server answers HTTP 404: there is no feed there"),
    ):
        subscribe(page, feeds.url(path))
        problem = page.locator("#e-feed_url").inner_text()
        assert problem.startswith("This address is not a podcast feed:"), problem
        assert reason in problem, problem
        assert page.get_by_label("Feed URL").input_value() == feeds.url(path)
    screenshot(page, "r2-subscribe-not-a-feed-1280")
    assert opa_feeds(server) == {}
    # A feed: its title on the very next page, without waiting for the fetcher's pass.
    subscribe(page, feeds.url("/show.xml"))
    assert page.get_by_role("status").inner_text().startswith("Subscribed.")
    assert page.locator(".sub .title").all_inner_texts() == ["The Show"]
    assert feeds.hits["/show.xml"] == 1
    # An address typed without a scheme is tried as https (here nothing answers TLS
    # on that port: accepted as it is, said at once, the fetcher tries again later).
    bare = feeds.url("/other.xml").removeprefix("http://")
    subscribe(page, bare)
    said = page.get_by_role("status").inner_text()
    assert said.startswith("Subscribed, but the feed could not be reached just now"), said
    assert opa_feeds(server) == {feeds.url("/show.xml"): True, "https://" + bare: True}


def test_a_podcast_page_continue_listening_and_refresh(
    served: tuple[str, Config], feeds: ThreadedFeedHost, page: Any
) -> None:
    server, _ = served
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    subscribe(page, feeds.url("/show.xml"))
    seed_listening(server, feeds)
    # Continue listening: the phone's later play wins over the tablet's backlog.
    page.goto(server + "/ui/")
    going = page.locator("section", has=page.get_by_role("heading", name="Continue listening"))
    first = going.locator(".history li").first.inner_text()
    assert "Episode 5: a conversation about things" in first
    assert "10:00 of 50:00 (20%)" in first and "Pixel" in first and "The Show" in first
    assert "In progress" in first
    finished = going.locator(".history.compact li").all_inner_texts()
    assert len(finished) == 1 and "Episode 4" in finished[0] and "Finished" in finished[0]
    # The podcast's page, from its row.
    page.goto(server + "/ui/subscriptions")
    page.get_by_role("link", name="The Show").click()
    assert heading(page) == "The Show"
    about = page.locator(".podcast").inner_text()
    assert feeds.url("/show.xml") in about and "Pixel, Tablet" in about
    # Its artwork's address answers nothing: the letter tile, and no image to load.
    assert page.locator(".podcast .art").inner_text() == "T"
    assert page.locator(".podcast img").count() == 0
    rows = page.locator("#h-episodes ~ ol li").all_inner_texts()
    assert [r.split("\n")[0] for r in rows] == [
        f"Episode {n}: a conversation about things" for n in (5, 4, 3, 2, 1)
    ]
    assert "In progress" in rows[0] and "10:00 of 50:00 (20%)" in rows[0] and "Pixel" in rows[0]
    assert "Finished" in rows[1] and "Tablet" in rows[1]
    assert "Downloaded" in rows[2]
    assert "Deleted" in rows[3]
    assert "Not played" in rows[4]  # in the feed, never acted on
    screenshot(page, "r2-podcast-1280")
    # Refresh, rate-limited per feed: the subscribe fetched this one a moment ago.
    before = feeds.hits["/show.xml"]
    page.get_by_role("button", name="Refresh").click()
    assert heading(page) == "The Show"
    assert "try again in a minute" in page.get_by_role("status").inner_text()
    assert feeds.hits["/show.xml"] == before
    # A feed an app synced (not fetched yet): Refresh on its page fetches it now and
    # brings its name; a second press within the minute fetches nothing.
    page.goto(server + "/ui/subscriptions")
    page.locator(".sub", has_text="other.xml").locator("a.title").click()
    page.get_by_role("button", name="Refresh").click()
    assert page.get_by_role("status").inner_text() == "Feed fetched."
    assert feeds.hits["/other.xml"] == 1
    assert heading(page) == "Another Show"
    page.get_by_role("button", name="Refresh").click()
    assert "try again in a minute" in page.get_by_role("status").inner_text()
    assert feeds.hits["/other.xml"] == 1
    # Unsubscribe from the podcast's page: a confirmation first, then back there.
    page.goto(server + "/ui/subscriptions")
    page.get_by_role("link", name="The Show").click()
    page.get_by_role("button", name="Unsubscribe").click()
    assert heading(page) == "Unsubscribe?"
    assert "Unsubscribe from “The Show”?" in page.locator("main").inner_text()
    page.get_by_role("link", name="Cancel").click()
    assert heading(page) == "The Show" and opa_feeds(server)[feeds.url("/show.xml")]
    page.get_by_role("button", name="Unsubscribe").click()
    page.get_by_role("button", name="Unsubscribe").click()
    assert heading(page) == "The Show"
    assert page.get_by_role("status").inner_text().startswith("Unsubscribed.")
    assert opa_feeds(server)[feeds.url("/show.xml")] is False
    page.get_by_role("button", name="Subscribe again").click()
    assert opa_feeds(server)[feeds.url("/show.xml")] is True


def test_a_failing_feed_is_quiet_in_the_list_and_retried_from_its_page(
    served: tuple[str, Config], feeds: ThreadedFeedHost, page: Any
) -> None:
    server, _ = served
    later = feeds.url("/later.xml")  # 404 for now
    api.MygPodderClient("alice", PASSWORD, server).update_subscriptions("phone-1", [later], [])
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    page.get_by_role("link", name="127.0.0.1/later.xml").click()
    page.get_by_role("button", name="Refresh").click()  # on the podcast's page
    assert "could not be fetched" in page.get_by_role("status").inner_text()
    # The list stays quiet (a word "404", not the digits of the feed host's port).
    page.goto(server + "/ui/subscriptions")
    assert not re.search(r"\b404\b", page.locator(".subs").inner_text())
    page.get_by_role("link", name="127.0.0.1/later.xml").click()
    about = page.locator(".podcast").inner_text()
    assert "the last try failed: HTTP 404." in about and "Next try" in about
    screenshot(page, "r2-podcast-failing-1280")
    assert page.get_by_role("button", name="Refresh").count() == 1  # the retry is here


def test_sorts_a_to_z_recently_added_and_recently_played(
    served: tuple[str, Config], feeds: ThreadedFeedHost, page: Any, tmp_path: Path
) -> None:
    server, _ = served
    client = api.MygPodderClient("alice", PASSWORD, server)
    # Feeds on 127.0.0.1 that answer 404: the fetcher reaches for no public host.
    urls = [feeds.url(f"/{name}.xml") for name in ("zebra", "alpha", "middle")]
    for url in urls:  # one at a time: "recently added" has an order to show
        client.update_subscriptions("phone-1", [url], [])
    client.upload_episode_actions(
        [
            api.EpisodeAction(urls[1], "https://a.example.com/1.mp3", "download", "phone-1",
                              "2026-11-01T08:00:00"),
            api.EpisodeAction(urls[2], "https://m.example.com/1.mp3", "play", "phone-1",
                              "2026-11-05T08:00:00", started=0, position=5, total=60),
        ]
    )  # fmt: skip
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    shown = page.locator(".sub .title")
    hosts = ["127.0.0.1/alpha.xml", "127.0.0.1/middle.xml"]
    assert shown.all_inner_texts() == [*hosts, "127.0.0.1/zebra.xml"]
    assert page.get_by_label("Sort by").input_value() == "title"
    page.get_by_label("Sort by").select_option(label="Recently added")
    page.get_by_role("button", name="Search").click()
    assert shown.all_inner_texts() == [
        "127.0.0.1/middle.xml",
        "127.0.0.1/alpha.xml",
        "127.0.0.1/zebra.xml",
    ]
    page.get_by_label("Sort by").select_option(label="Recently played")
    page.get_by_role("button", name="Search").click()
    assert shown.all_inner_texts()[:2] == hosts[::-1]
    assert "sort=played" in page.url


def test_the_import_report_names_the_feeds_and_a_reload_sends_nothing(
    served: tuple[str, Config], feeds: ThreadedFeedHost, page: Any, tmp_path: Path
) -> None:
    server, _ = served
    opml = tmp_path / "mine.opml"
    alpha, beta = feeds.url("/alpha.xml"), feeds.url("/beta.xml")
    opml.write_text(
        '<?xml version="1.0"?><opml version="2.0"><body>'
        f'<outline type="rss" text="Alpha Show" xmlUrl="{alpha}"/>'
        '<outline type="rss" text="Broken" xmlUrl="ftp://nope.example.com/x"/>'
        f'<outline type="rss" xmlUrl="{beta}"/>'
        "</body></opml>"
    )
    sign_in(page, server)
    page.goto(server + "/ui/transfer")
    page.get_by_label("OPML file", exact=True).set_input_files(str(opml))
    page.get_by_role("button", name="Import").click()
    assert page.url == server + "/ui/transfer?done=imported"  # a redirect after the POST
    report = page.locator(".report").inner_text()
    assert "2 added, 0 subscribed again, 0 already there, 1 skipped" in report
    assert "Alpha Show" in report and beta in report
    assert "ftp://nope.example.com/x" in report
    assert "Not a web address: a feed's address starts with http:// or https://." in report
    assert "feed_url" not in report
    screenshot(page, "r2-import-report-1280")
    # Reloading shows the same report and sends nothing again.
    page.reload()
    assert page.url == server + "/ui/transfer?done=imported"
    assert "2 added" in page.locator(".report").inner_text()
    assert len(opa_feeds(server)) == 2
    page.goto(server + "/ui/transfer")
    assert page.locator(".report").count() == 0


def test_wording_sign_in_lockout_and_the_loopback_warning(
    served: tuple[str, Config], page: Any
) -> None:
    server, _ = served
    page.goto(server + "/ui/login")
    assert "podsync user" not in page.locator("main").inner_text()
    assert "Ask the admin of this server" in page.locator("main").inner_text()
    for n in range(6):  # different ones: the same one again counts once
        page.get_by_label("Username").fill("bob")
        page.get_by_label("Password").fill(f"wrong password {n}")
        page.get_by_role("button", name="Sign in").click()
    said = page.get_by_role("alert").inner_text()
    assert "seconds" not in said and "minute" in said, said
    assert "ask an admin of this server to unlock the account" in said, said
    sign_in(page, server)
    warning = page.locator("p.warn").inner_text()
    assert "a phone cannot reach it" in warning
    assert "plain http" in page.locator("p.note").inner_text()


def test_phone_layout_the_list_is_short_and_the_pager_on_top(
    served: tuple[str, Config],
    feeds: ThreadedFeedHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    urls = [feeds.url(f"/show/{i:02d}/feed.xml") for i in range(60)]
    api.MygPodderClient("alice", PASSWORD, server).update_subscriptions("laptop", urls, [])
    ctx = browser.new_context(viewport=PHONE)
    phone = ctx.new_page()
    sign_in(phone, server)
    phone.goto(server + "/ui/subscriptions")
    assert phone.locator(".sub").count() == 50
    height = phone.evaluate("() => document.documentElement.scrollHeight")
    pager_top = phone.locator("nav.pager").first.bounding_box()["y"]
    first_row = phone.locator(".sub").first.bounding_box()["y"]
    screenshot(phone, "r2-subscriptions-50-390")
    ctx.close()
    assert pager_top < first_row  # the pager above the list, not only 50 rows down
    assert height < 7000, height  # 50 rows were 12,500 px in the first release


REPORTED_OPML = (
    b'<?xml version="1.0"?><opml version="2.0"><body>'
    b'<outline type="rss" text="Alpha Show" xmlUrl="http://127.0.0.1:1/alpha.xml"/>'
    b'<outline type="rss" text="Broken" xmlUrl="ftp://nope.example.com/x"/>'
    b"</body></opml>"
)
NEW_PAGES = (
    "overview",
    "podcast",
    "history-plays",
    "subscriptions-sorted",
    "unsubscribe-confirm",
    "device-remove-confirm",
    "subscribe-refused",
    "import-report",
)


def open_new_page(page: Any, server: str, name: str, podcast: str, feeds: ThreadedFeedHost) -> None:
    """Bring `page` to one of NEW_PAGES (a confirmation page by its first press)."""
    paths = {
        "overview": "/ui/",
        "podcast": podcast,
        "history-plays": "/ui/history?action=play",
        "subscriptions-sorted": "/ui/subscriptions?sort=played",
        "unsubscribe-confirm": podcast,
        "device-remove-confirm": "/ui/devices",
        "subscribe-refused": "/ui/subscriptions",
        "import-report": "/ui/transfer",
    }
    page.goto(server + paths[name])
    if name == "unsubscribe-confirm":
        page.get_by_role("button", name="Unsubscribe").click()
        assert heading(page) == "Unsubscribe?"
    elif name == "device-remove-confirm":
        page.get_by_role("button", name="Remove").first.click()
        assert heading(page) == "Remove this device?"
    elif name == "subscribe-refused":
        subscribe(page, feeds.url("/cover.png"))
        assert page.locator("#e-feed_url").count() == 1
    elif name == "import-report":
        page.get_by_label("OPML file", exact=True).set_input_files(
            {"name": "mine.opml", "mimeType": "text/x-opml", "buffer": REPORTED_OPML}
        )
        page.get_by_role("button", name="Import").click()
        assert page.locator(".report").count() == 1


def test_new_pages_at_both_sizes_light_and_dark_axe_and_screenshots(
    served: tuple[str, Config],
    feeds: ThreadedFeedHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    source = axe_source()
    failures: dict[str, Any] = {}
    setup = browser.new_context(viewport=DESKTOP)
    first = setup.new_page()
    sign_in(first, server)
    first.goto(server + "/ui/subscriptions")
    subscribe(first, feeds.url("/show.xml"))
    subscribe(first, feeds.url("/page.html"))  # refused: the form with its error
    seed_listening(server, feeds)
    first.goto(server + "/ui/subscriptions")
    first.get_by_role("link", name="The Show").click()
    podcast_path = first.url.removeprefix(server)
    setup.close()
    for size_name, size in (("390", PHONE), ("1280", DESKTOP)):
        for scheme in ("light", "dark"):
            ctx = browser.new_context(viewport=size, color_scheme=scheme)
            page = ctx.new_page()
            sign_in(page, server)
            for name in NEW_PAGES:
                open_new_page(page, server, name, podcast_path, feeds)
                label = f"r2-{name}-{size_name}-{scheme}"
                screenshot(page, label)
                found = check_accessibility(page, source)
                if found:
                    failures[label] = found
                width = page.evaluate("() => document.documentElement.scrollWidth")
                assert width <= size["width"], (label, width)
            ctx.close()
    assert not failures, violations_text(failures)  # type: ignore[arg-type]


def test_a_podcast_page_lists_the_whole_feed_newest_first_a_page_at_a_time(
    served: tuple[str, Config],
    feeds: ThreadedFeedHost,
    browser: Any,  # noqa: F811
) -> None:
    """Episodes never acted on show in the feed's order as not played, among those
    acted on with their state; the feed's 120 episodes take two pages, then the
    episode the feed no longer lists; axe-core on both pages at both sizes, light
    and dark."""
    server, _ = served
    long = feeds.url("/long.xml")
    setup = browser.new_context(viewport=DESKTOP)
    first = setup.new_page()
    sign_in(first, server)
    first.goto(server + "/ui/subscriptions")
    subscribe(first, long)
    client = api.MygPodderClient("alice", PASSWORD, server)
    assert client.update_device_settings("phone-1", "Pixel", "mobile")
    client.upload_episode_actions(
        [
            api.EpisodeAction(long, "https://cdn.show.example/119.mp3", "play", "phone-1",
                              "2026-11-10T08:00:00", started=0, position=900, total=3600),
            api.EpisodeAction(long, "https://cdn.show.example/117.mp3", "download", "phone-1",
                              "2026-11-09T08:00:00"),
            api.EpisodeAction(long, "https://cdn.show.example/gone.mp3", "play", "phone-1",
                              "2025-01-09T08:00:00", started=0, position=3600, total=3600),
        ]
    )  # fmt: skip
    first.goto(server + "/ui/subscriptions")
    first.get_by_role("link", name="A Long Show").click()
    first.wait_for_load_state()  # the click waits for the page to start, not to end
    podcast_path = first.url.removeprefix(server)
    rows = first.locator("#h-episodes ~ ol li")
    assert rows.count() == 100
    texts = rows.all_inner_texts()
    assert [t.split("\n")[0] for t in texts[:4]] == [
        f"Episode {n}: a conversation about things" for n in (120, 119, 118, 117)
    ]
    assert "Not played" in texts[0] and "Not played" in texts[2]
    assert "In progress" in texts[1] and "15:00 of 1:00:00 (25%)" in texts[1]
    assert "Pixel" in texts[1] and "Downloaded" in texts[3]
    assert first.locator("nav.pager").first.inner_text().count("Page 1 of 2") == 1
    screenshot(first, "r2-podcast-episodes-1280")
    first.get_by_role("link", name="Next →").first.click()
    first.wait_for_load_state()
    texts = first.locator("#h-episodes ~ ol li").all_inner_texts()
    assert [t.split("\n")[0] for t in texts] == [
        *(f"Episode {n}: a conversation about things" for n in range(20, 0, -1)),
        "gone.mp3",
    ]
    assert "Finished" in texts[-1] and "no longer in the feed" in texts[-1]
    setup.close()
    source = axe_source()
    failures: dict[str, Any] = {}
    for size_name, size in (("390", PHONE), ("1280", DESKTOP)):
        for scheme in ("light", "dark"):
            ctx = browser.new_context(viewport=size, color_scheme=scheme)
            page = ctx.new_page()
            sign_in(page, server)
            for number in (1, 2):
                page.goto(server + podcast_path + ("?page=2" if number == 2 else ""))
                label = f"r2-podcast-episodes-p{number}-{size_name}-{scheme}"
                screenshot(page, label)
                found = check_accessibility(page, source)
                if found:
                    failures[label] = found
                width = page.evaluate("() => document.documentElement.scrollWidth")
                assert width <= size["width"], (label, width)
            ctx.close()
    assert not failures, violations_text(failures)  # type: ignore[arg-type]
