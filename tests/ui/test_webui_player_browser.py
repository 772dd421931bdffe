"""The mini-player, in a real headless Chromium against a real `podsync serve`: a
feed and its WAV files on 127.0.0.1 (Range answered), data pushed through the apps'
APIs (an AntennaPod replica 40 s into "Harbour lights").

- Playback survives moving to another page (htmx swaps the page, the bar and its
  audio stay and keep playing), with no Content-Security-Policy violation.
- Back 15 s and forward 30 s move the position; Space and the arrows do the same.
- The speed is kept per podcast on the server: a second browser (a new context)
  plays that podcast at it.
- Times in the show notes seek; "Your state" follows a save without a reload.
- Continue listening: artwork, a play button that starts the bar at the synced
  position, Remove (nothing written for the apps), back after a new play.
- The manifest is served and linked from every page.
- Every changed page axe-clean at 390 and 1280 px, light and dark, screenshots in
  build/screenshots/player-*; without script every page still works.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
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
from tests.ui.test_webui_listen_browser import EPISODES, subscribed_phone, wait_for

pytestmark = pytest.mark.slow

NOTES = {2: "<p>At 1:10 the harbour master speaks; at 1:40 the lights.</p>"}
# Harbour lights (2): Podlove's chapters in the item; Salt and rope (1): Podcasting
# 2.0's, a JSON document on the same host.
CHAPTERS = {
    2: '<psc:chapters version="1.2"><psc:chapter start="00:00:00.000" title="Intro"/>'
    '<psc:chapter start="00:01:10" title="The harbour master"/>'
    '<psc:chapter start="1:40.5" title="The lights"/></psc:chapters>',
    1: '<podcast:chapters url="/1.chapters.json" type="application/json+chapters"/>',
}
CHAPTERS_JSON = {
    "/1.chapters.json": (
        "application/json+chapters",
        json.dumps(
            {
                "version": "1.2.0",
                "chapters": [
                    {"startTime": 0, "title": "Knots"},
                    {"startTime": 45.5, "title": "Salt"},
                    {"startTime": 60, "title": "Hidden", "toc": False},
                ],
            }
        ).encode(),
    )
}


@pytest.fixture
def media() -> Iterator[MediaHost]:
    host = MediaHost("Sea Stories", EPISODES, NOTES, CHAPTERS, CHAPTERS_JSON)
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


def watch_errors(page: Any) -> list[str]:
    """The console's errors (a CSP violation is one) and the page's uncaught ones."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def bar_audio(page: Any) -> Any:
    return page.locator("#player-bar audio")


def current_time(page: Any) -> float:
    return float(bar_audio(page).evaluate("a => a.currentTime"))


def playing(page: Any) -> bool:
    return not bar_audio(page).evaluate("a => a.paused")


def words(found: Any) -> list[str]:
    return [" ".join(text.split()) for text in found.all_inner_texts()]


def heading(page: Any, text: str) -> None:
    wait_for(lambda: page.get_by_role("heading", level=1).inner_text() == text)


def open_episode(page: Any, title: str) -> None:
    page.locator("nav[aria-label=Main]").get_by_role("link", name="Subscriptions").click()
    heading(page, "Subscriptions")
    page.get_by_role("link", name="Sea Stories", exact=True).click()
    heading(page, "Sea Stories")
    page.locator("main").get_by_role("link", name=title, exact=True).click()
    heading(page, title)


def test_playback_goes_on_across_pages_with_skip_keys_and_no_csp_violation(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(boosted=True, viewport=PHONE)
    page = ctx.new_page()
    errors = watch_errors(page)
    subscribed_phone(page, server, media)
    open_episode(page, "Harbour lights")
    bar = page.locator("#player-bar")
    # The page's own player gave way to the bar, ready at the phone's position.
    wait_for(lambda: bar.is_visible() and bar_audio(page).evaluate("a => a.readyState") >= 1)
    assert page.locator("audio").count() == 1
    assert 39.5 <= current_time(page) <= 41
    assert "Harbour lights" in bar.inner_text() and "Sea Stories" in bar.inner_text()
    assert "starts where you stopped, at 0:40" in page.get_by_role("status").inner_text()
    assert page.get_by_text("Keyboard shortcuts").is_visible()
    bar.get_by_role("button", name=re.compile("^Play")).click()
    wait_for(lambda: current_time(page) >= 41.5)
    screenshot(page, "player-episode-playing-390")
    # The phone's lock screen: the Media Session's episode and podcast.
    session = page.evaluate(
        "() => { const m = navigator.mediaSession.metadata;"
        " return [m.title, m.artist, navigator.mediaSession.playbackState]; }"
    )
    assert session == ["Harbour lights", "Sea Stories", "playing"]
    # Another page, by the navigation: still playing, and the time goes on.
    marker = bar.evaluate("b => { b.dataset.marker = 'kept'; return 1; }")
    assert marker == 1
    page.locator("nav[aria-label=Main]").get_by_role("link", name="Listening history").click()
    heading(page, "Listening history")
    assert page.url.endswith("/ui/history")
    assert bar.get_attribute("data-marker") == "kept"  # the very same element
    assert playing(page)
    before = current_time(page)
    wait_for(lambda: current_time(page) >= before + 1)
    assert bar.is_visible()
    nav_current = page.locator("nav[aria-label=Main] a[aria-current=page]")
    assert nav_current.inner_text() == "Listening history"
    screenshot(page, "player-history-playing-390")
    # Skip: back 15 s, forward 30 s (buttons), then the keys.
    at = current_time(page)
    bar.get_by_role("button", name="Back 15 seconds").click()
    assert current_time(page) <= at - 13
    at = current_time(page)
    bar.get_by_role("button", name="Forward 30 seconds").click()
    assert current_time(page) >= at + 28
    page.locator("main h1").click()  # focus out of the bar's buttons
    at = current_time(page)
    page.keyboard.press("ArrowLeft")
    assert current_time(page) <= at - 13
    page.keyboard.press("Space")
    wait_for(lambda: not playing(page))
    page.keyboard.press("Space")
    wait_for(lambda: playing(page))
    # The title opens the episode's page; Back returns, still playing.
    bar.get_by_role("link", name="Harbour lights").click()
    heading(page, "Harbour lights")
    assert playing(page)
    page.go_back()
    heading(page, "Listening history")
    assert playing(page)
    bar.get_by_role("button", name=re.compile("^Pause")).click()
    wait_for(lambda: not playing(page))
    csp = [e for e in errors if "Content Security Policy" in e or "Refused" in e]
    assert not csp, csp
    assert not errors, errors
    ctx.close()


def test_speed_follows_the_person_to_a_second_browser(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    first = browser.new_context(boosted=True, viewport=DESKTOP)
    page = first.new_page()
    subscribed_phone(page, server, media)
    open_episode(page, "Harbour lights")
    bar = page.locator("#player-bar")
    wait_for(lambda: bar.is_visible())
    with page.expect_response(lambda r: r.url.endswith("/speed")) as answer:
        bar.get_by_label("Speed").select_option("1.5")
    assert answer.value.status == 200
    assert bar_audio(page).evaluate("a => a.playbackRate") == 1.5
    first.close()
    # A second browser: the same podcast plays at 1.5x, another episode too.
    second = browser.new_context(boosted=True, viewport=DESKTOP)
    page = second.new_page()
    sign_in(page, server)
    open_episode(page, "The tide tables")
    bar = page.locator("#player-bar")
    wait_for(lambda: bar.is_visible())
    assert bar.get_by_label("Speed").input_value() == "1.5"
    assert bar_audio(page).evaluate("a => a.playbackRate") == 1.5
    second.close()


def test_times_in_notes_seek_and_your_state_follows_a_save(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(boosted=True, viewport=DESKTOP)
    page = ctx.new_page()
    subscribed_phone(page, server, media)
    open_episode(page, "Harbour lights")
    bar = page.locator("#player-bar")
    wait_for(lambda: bar.is_visible() and bar_audio(page).evaluate("a => a.readyState") >= 1)
    state = page.locator("#episode-state")
    assert "0:40 of 2:00" in state.inner_text()
    page.locator(".notes").get_by_role("link", name="1:10").click()
    wait_for(lambda: playing(page) and current_time(page) >= 70)
    assert current_time(page) < 75
    wait_for(lambda: current_time(page) >= 72)
    bar.get_by_role("button", name=re.compile("^Pause")).click()
    wait_for(lambda: page.get_by_role("status").inner_text().startswith("Position saved"))
    # "Your state" shows the saved position without a reload.
    wait_for(lambda: "1:1" in state.inner_text() and "Web browser" in state.inner_text())
    assert "0:40 of 2:00" not in state.inner_text()
    ctx.close()


def test_chapters_from_the_feed_and_from_their_json_seek(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(boosted=True, viewport=DESKTOP)
    page = ctx.new_page()
    errors = watch_errors(page)
    subscribed_phone(page, server, media)
    open_episode(page, "Harbour lights")
    listed = page.locator("ol.chapters a")
    assert words(listed) == ["0:00 Intro", "1:10 The harbour master", "1:40 The lights"]
    wait_for(lambda: bar_audio(page).evaluate("a => a.readyState") >= 1)
    listed.filter(has_text="The lights").click()
    wait_for(lambda: playing(page) and current_time(page) >= 100)
    page.locator("#player-bar").get_by_role("button", name=re.compile("^Pause")).click()
    # Podcasting 2.0 chapters: fetched by podsync from the feed's host, "toc": false left out.
    open_episode(page, "Salt and rope")
    wait_for(lambda: page.locator("ol.chapters a").count() == 2)
    assert words(page.locator("ol.chapters a")) == ["0:00 Knots", "0:45 Salt"]
    assert media.hits["/1.chapters.json"] == 1
    page.locator("ol.chapters a").filter(has_text="Salt").click()
    wait_for(lambda: playing(page) and 45 <= current_time(page) < 50)
    info = page.request.get(server + page.url.split(server)[1] + "/player.json").json()
    assert info["title"] == "Salt and rope" and info["chapters"].endswith("/chapters.json")
    screenshot(page, "player-chapters-1280")
    assert not errors, errors
    ctx.close()


def test_continue_listening_plays_and_removes(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(boosted=True, viewport=PHONE)
    page = ctx.new_page()
    phone = subscribed_phone(page, server, media)
    page.goto(server + "/ui/")
    section = page.locator("section", has=page.get_by_role("heading", name="Continue listening"))
    row = section.locator("li", has_text="Harbour lights")
    assert row.locator(".art").count() == 1
    row.get_by_role("link", name=re.compile("^Play")).click()
    bar = page.locator("#player-bar")
    # play() unpauses at once; the saved position is sought when the metadata is in
    # (player.js, loadedmetadata): wait for that jump, then check where it landed. Had
    # it played from the start, it would be at about 1 s here.
    wait_for(lambda: bar.is_visible() and playing(page) and current_time(page) >= 1)
    assert 39.5 <= current_time(page) <= 43
    assert page.url.rstrip("/").endswith("/ui")  # it played here, no page was opened
    bar.get_by_role("button", name=re.compile("^Pause")).click()
    wait_for(lambda: not playing(page))
    screenshot(page, "player-overview-390")
    actions_before = json.loads(
        call(server, "GET", "/api/2/episodes/alice.json?since=0", **basic()).body
    )["actions"]
    row.get_by_role("button", name=re.compile("^Remove from Continue listening")).click()
    wait_for(lambda: "Removed from Continue listening" in page.locator("main").inner_text())
    assert section.locator("li", has_text="Harbour lights").count() == 0
    actions_after = json.loads(
        call(server, "GET", "/api/2/episodes/alice.json?since=0", **basic()).body
    )["actions"]
    assert actions_after == actions_before  # nothing for the apps
    # A later play (the phone's) brings it back.
    phone.queued_actions.append(
        {
            "podcast": media.url("/show.xml"),
            "episode": media.url("/2.wav"),
            "device": "pixel",
            "action": "play",
            "timestamp": "2030-01-01T08:00:00",
            "started": 50,
            "position": 60,
            "total": 120,
        }
    )
    phone.sync()
    page.goto(server + "/ui/")
    assert section.locator("li", has_text="Harbour lights").count() == 1
    ctx.close()


def test_manifest_served_and_linked(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(boosted=True, viewport=DESKTOP)
    page = ctx.new_page()
    sign_in(page, server)
    for path in ("/ui/", "/ui/history", "/ui/stats", "/ui/search", "/ui/account"):
        page.goto(server + path)
        assert page.locator('link[rel="manifest"]').get_attribute("href") == (
            "/ui/static/manifest.webmanifest"
        )
    answer = page.request.get(server + "/ui/static/manifest.webmanifest")
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("application/manifest+json")
    manifest = answer.json()
    assert manifest["display"] == "standalone" and manifest["theme_color"]
    for icon in manifest["icons"]:
        got = page.request.get(server + icon["src"])
        assert got.status == 200 and got.headers["content-type"].startswith("image/")
    ctx.close()


def test_changed_pages_axe_both_sizes_light_and_dark_and_without_script(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    setup = browser.new_context(boosted=True, viewport=DESKTOP)
    subscribed_phone(setup.new_page(), server, media)
    setup.close()
    source = axe_source()
    failures: dict[str, Any] = {}
    for size_name, size in (("390", PHONE), ("1280", DESKTOP)):
        for scheme in ("light", "dark"):
            ctx = browser.new_context(boosted=True, viewport=size, color_scheme=scheme)
            page = ctx.new_page()
            sign_in(page, server)
            open_episode(page, "Harbour lights")
            wait_for(lambda: page.locator("#player-bar").is_visible())  # noqa: B023
            for path in ("/ui/", "/ui/history", "/ui/stats", "/ui/search?q=harbour"):
                page.goto(server + path)
                wait_for(lambda: page.locator("#player-bar").is_visible())  # noqa: B023
                label = (
                    f"player-{path.strip('/').replace('/', '-').split('?')[0]}-{size_name}-{scheme}"
                )
                screenshot(page, label)
                found = check_accessibility(page, source)
                if found:
                    failures[label] = found
                width = page.evaluate("() => document.documentElement.scrollWidth")
                assert width <= size["width"], (label, width)
                small = page.evaluate(
                    """() => [...document.querySelectorAll(
                        'button, .button, nav[aria-label=Main] a, .choices a')]
                      .filter(e => e.offsetParent !== null)
                      .filter(e => e.getBoundingClientRect().height < 44)
                      .map(e => e.textContent.trim())"""
                )
                assert not small, (label, small)
            ctx.close()
    assert not failures, violations_text(failures)  # type: ignore[arg-type]
    # Without script: the pages, the episode's own player, Remove, a time link.
    ctx = browser.new_context(boosted=True, viewport=PHONE, java_script_enabled=False)
    page = ctx.new_page()
    sign_in(page, server)
    assert not page.locator("#player-bar").is_visible()
    page.get_by_role("link", name="Harbour lights").first.click()
    assert page.locator("audio").get_attribute("src") == media.url("/2.wav") + "#t=40"
    page.locator(".notes").get_by_role("link", name="1:10").click()
    assert page.locator("audio").get_attribute("src") == media.url("/2.wav") + "#t=70"
    assert "It starts at 1:10." in page.get_by_role("status").inner_text()
    page.locator("ol.chapters a").filter(has_text="The lights").click()
    assert page.locator("audio").get_attribute("src") == media.url("/2.wav") + "#t=100"
    page.goto(server + "/ui/")
    page.get_by_role("button", name=re.compile("^Remove from Continue listening")).click()
    assert "Removed from Continue listening" in page.locator(".notice").inner_text()
    for name in ("Search", "Statistics"):
        page.locator("nav[aria-label=Main]").get_by_role("link", name=name).click()
        current = page.locator("nav[aria-label=Main] a[aria-current=page]")
        assert current.inner_text() == name
    ctx.close()


def test_autoplay_plays_the_next_episode_of_up_next(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    """Two episodes in Up next, autoplay on (the default): the bar plays the first,
    and when it ends plays the second, which is then at the head of the queue."""
    server, _ = served
    ctx = browser.new_context(boosted=True, viewport=DESKTOP)
    page = ctx.new_page()
    errors = watch_errors(page)
    subscribed_phone(page, server, media)
    page.locator("nav[aria-label=Main]").get_by_role("link", name="Subscriptions").click()
    heading(page, "Subscriptions")
    page.get_by_role("link", name="Sea Stories", exact=True).click()
    heading(page, "Sea Stories")
    for title in ("The tide tables", "Salt and rope"):
        add = page.get_by_role("button", name=re.compile(rf"^Add to Up next\W+{title}$"))
        add.click()
        # The notice of the first add is still there when the second is sent: wait for
        # this episode's button to go (the page came back), or the click on Up next
        # below races the form's answer, which brings back this page.
        wait_for(lambda add=add: add.count() == 0)
        assert "Added to Up next." in page.locator(".notice").inner_text()
    page.locator("nav[aria-label=Main]").get_by_role("link", name="Up next").click()
    heading(page, "Up next")
    assert "Autoplay is on" in page.inner_text("main")
    assert words(page.locator("main a.episode")) == ["The tide tables", "Salt and rope"]
    page.locator("main").get_by_role("link", name=re.compile(r"^Play\W+The tide tables$")).click()
    bar = page.locator("#player-bar")
    wait_for(lambda: bar.is_visible() and playing(page))
    assert "The tide tables" in bar.inner_text()
    # Playing can start before the length is known (a media element's duration is NaN
    # until its metadata arrives): seek near the end only once it is.
    wait_for(lambda: bar_audio(page).evaluate("a => Number.isFinite(a.duration)"))
    bar_audio(page).evaluate("a => { a.currentTime = a.duration - 1.5; }")
    wait_for(lambda: "Salt and rope" in bar.inner_text() and playing(page), seconds=20)
    assert current_time(page) < 30
    page.reload()
    heading(page, "Up next")
    assert words(page.locator("main a.episode")) == ["Salt and rope"]
    bar.get_by_role("button", name=re.compile("^(Pause|Play)")).first.click()
    assert not errors, errors
    ctx.close()
