"""Listening in the browser, in a real headless Chromium against a real `podsync
serve`: a feed and its WAV files on 127.0.0.1 (Range answered, so the player starts
in the middle and seeks), data pushed through the apps' APIs (an AntennaPod replica).

- The episode page's player starts where AntennaPod stopped; a listening session
  (play to pause) is one play of the device "Web browser", updated by each 30-s
  save, that another device's pull of
  /api/2/episodes/U.json and of Nextcloud's episode_action finds, and that the
  AntennaPod replica applies at its next sync; the end of the file is a finish.
- Without script the page still plays (the same address, from where the person
  stopped) and says that the position is not saved.
- Mark played / not played are buttons (forms) on the episode and podcast pages.
- Every new page is axe-clean at 390 and 1280 px in light and dark; screenshots
  are kept (build/screenshots/listen-*)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from podsync.config import Config
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.antennapod_replica import AntennaPod
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


@pytest.fixture
def media() -> Iterator[MediaHost]:
    host = MediaHost("Sea Stories", EPISODES)
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


def subscribed_phone(page: Any, server: str, media: MediaHost) -> AntennaPod:
    """Signed in, subscribed on the Subscriptions page (podsync fetches the feed at
    once); AntennaPod subscribed too, 40 s into "Harbour lights" (episode 2)."""
    sign_in(page, server)
    page.goto(server + "/ui/subscriptions")
    page.get_by_label("Feed URL").fill(media.url("/show.xml"))
    page.get_by_role("button", name="Subscribe", exact=True).click()
    assert page.get_by_role("status").inner_text().startswith("Subscribed.")
    phone = AntennaPod(server, "alice", PASSWORD, "pixel")
    phone.setup("Pixel 8")
    phone.subscribe(media.url("/show.xml"))
    played = {"podcast": media.url("/show.xml"), "episode": media.url("/2.wav"),
              "device": "pixel", "action": "play", "timestamp": "2026-11-20T08:00:00",
              "started": 0, "position": 40, "total": 120}  # fmt: skip
    phone.queued_actions.append(played)
    phone.sync()
    return phone


def latest_play(actions: list[dict[str, Any]], episode: str) -> dict[str, Any]:
    plays = [a for a in actions if a["action"] == "play" and a["episode"] == episode]
    assert plays, actions
    return max(plays, key=lambda a: a["timestamp"])


def pulls(server: str, episode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The latest play of the episode in another device's gpodder pull and in a
    Nextcloud app's pull."""
    gpodder = call(server, "GET", "/api/2/episodes/alice.json?since=0", **basic())
    assert gpodder.status == 200
    nextcloud = call(server, "GET", "/index.php/apps/gpoddersync/episode_action?since=0", **basic())
    assert nextcloud.status == 200
    return (
        latest_play(json.loads(gpodder.body)["actions"], episode),
        latest_play(json.loads(nextcloud.body)["actions"], episode),
    )


def wait_for(check: Callable[[], bool], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def open_episode(page: Any, server: str, title: str) -> None:
    page.goto(server + "/ui/subscriptions")
    page.get_by_role("link", name="Sea Stories").click()
    page.get_by_role("link", name=title, exact=True).click()
    assert page.get_by_role("heading", level=1).inner_text() == title


def test_the_player_starts_where_the_phone_stopped_and_the_phone_continues_from_the_web(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    phone = subscribed_phone(page, server, media)
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    open_episode(page, server, "Harbour lights")
    text = page.locator("main").inner_text()
    assert "In progress" in text and "0:40 of 2:00 (33%)" in text and "Pixel 8" in text
    assert "Notes of Harbour lights." in page.locator(".notes").inner_text()
    status = page.get_by_role("status")
    # The script runs (deferred: on a busy machine it may not have yet).
    wait_for(lambda: "starts where you stopped" in status.inner_text())
    audio = page.locator("audio")
    wait_for(lambda: page.evaluate("() => document.querySelector('audio').readyState") >= 1)
    # The browser's own player, from where the phone stopped (#t=40).
    assert 39.5 <= audio.evaluate("a => a.currentTime") <= 41
    audio.evaluate("a => a.play()")
    wait_for(lambda: audio.evaluate("a => a.currentTime") >= 44)
    audio.evaluate("a => a.pause()")
    wait_for(lambda: status.inner_text().startswith("Position saved"))
    assert media.ranges, "the player asked for ranges of the file"
    assert media.hits["/2.wav"] >= 1 and not any("/ui/" in u and "wav" in u for u in asked)
    gpodder, nextcloud = pulls(server, media.url("/2.wav"))
    assert gpodder["device"] == "web" and nextcloud["device"] == "web"
    assert gpodder["started"] in (39, 40) and 44 <= gpodder["position"] <= 47
    assert (nextcloud["position"], nextcloud["total"]) == (gpodder["position"], 120)
    # AntennaPod's next sync: the position the web player reached.
    phone.sync()
    assert phone.positions()[media.url("/2.wav")] == (gpodder["position"], False)
    devices = call(server, "GET", "/api/2/devices/alice.json", **basic())
    assert {"id": "web", "caption": "Web browser"}.items() <= {
        k: v for d in json.loads(devices.body) if d["id"] == "web" for k, v in d.items()
    }.items()
    # To the end: the last play is a finish at the total.
    audio.evaluate("a => { a.currentTime = 117; return a.play(); }")
    wait_for(lambda: audio.evaluate("a => a.ended"), 15)
    wait_for(lambda: "(finished)" in status.inner_text())
    gpodder, _ = pulls(server, media.url("/2.wav"))
    assert (gpodder["position"], gpodder["total"]) == (120, 120)
    phone.sync()
    assert phone.positions()[media.url("/2.wav")] == (120, True)
    page.reload()
    assert "Finished" in page.locator(".state").inner_text()
    ctx.close()


def test_while_it_plays_every_30_s_save_of_one_session_updates_one_play(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    """The page's timers run on playwright's clock (30 s pass at once); the audio
    plays in real time. A listening session (play to pause) is one play action:
    each 30-s save updates it (`started` where the session began, `position` where
    it is) instead of adding one; a pause ends the session, the next play begins
    another."""
    server, _ = served
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    subscribed_phone(page, server, media)
    page.clock.install()
    open_episode(page, server, "Harbour lights")
    audio = page.locator("audio")
    status = page.get_by_role("status")
    wait_for(lambda: audio.evaluate("a => a.readyState") >= 1)
    audio.evaluate("a => a.play()")
    wait_for(lambda: audio.evaluate("a => a.currentTime") >= 43)
    page.clock.run_for(30_000)
    wait_for(lambda: status.inner_text().startswith("Position saved"))
    assert not audio.evaluate("a => a.paused")  # saved while it plays
    first, _ = pulls(server, media.url("/2.wav"))
    assert first["device"] == "web" and first["started"] in (39, 40) and first["position"] >= 43
    positions = [first["position"]]
    for _ in range(3):
        wait_for(lambda: audio.evaluate("a => a.currentTime") >= positions[-1] + 2)
        status.evaluate("s => { s.textContent = ''; }")
        page.clock.run_for(30_000)
        wait_for(lambda: status.inner_text().startswith("Position saved"))
        latest, in_nextcloud = pulls(server, media.url("/2.wav"))
        assert latest["started"] == first["started"] and latest["position"] > positions[-1]
        assert in_nextcloud["position"] == latest["position"]
        positions.append(latest["position"])
    assert len(web_plays(server)) == 1  # four saves, one play action
    audio.evaluate("a => a.pause()")
    wait_for(lambda: web_plays(server)[0]["position"] >= positions[-1])
    audio.evaluate("a => a.play()")  # a new session
    wait_for(lambda: audio.evaluate("a => a.currentTime") >= positions[-1] + 4)
    audio.evaluate("a => a.pause()")
    wait_for(lambda: len(web_plays(server)) == 2)
    ctx.close()


def web_plays(server: str) -> list[dict[str, Any]]:
    answer = call(server, "GET", "/api/2/episodes/alice.json?since=0", **basic())
    assert answer.status == 200
    actions: list[dict[str, Any]] = json.loads(answer.body)["actions"]
    return [a for a in actions if a["action"] == "play" and a.get("device") == "web"]


def test_without_script_it_plays_and_says_the_position_is_not_saved_and_marks_by_forms(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    ctx = browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = ctx.new_page()
    subscribed_phone(page, server, media)
    open_episode(page, server, "Harbour lights")
    said = page.get_by_role("status").inner_text()
    assert "It starts at 0:40" in said and "position is not saved" in said
    assert page.locator("audio").get_attribute("src") == media.url("/2.wav") + "#t=40"
    page.get_by_role("button", name="Mark played").click()
    assert "Marked played." in page.locator(".notice").inner_text()
    assert "Finished" in page.locator(".state").inner_text()
    gpodder, _ = pulls(server, media.url("/2.wav"))
    assert (gpodder["device"], gpodder["position"], gpodder["total"]) == ("web", 120, 120)
    page.get_by_role("button", name="Mark not played").click()
    assert "Not played" in page.locator(".state").inner_text()
    # A podcast page's rows: Mark played, then its filters.
    page.get_by_role("link", name="Sea Stories").click()
    page.get_by_role("button", name=re.compile(r"^Mark played\W+Salt and rope$")).click()
    assert "Marked played." in page.locator(".notice").inner_text()
    page.get_by_role("link", name=re.compile(r"^Finished \(")).click()
    assert page.locator("a.episode").all_inner_texts() == ["Salt and rope"]
    page.get_by_role("link", name=re.compile(r"^Not played \(")).click()
    assert page.locator("a.episode").all_inner_texts() == ["The tide tables", "Harbour lights"]
    page.get_by_role("link", name=re.compile(r"^In progress \(")).click()
    assert page.locator("a.episode").count() == 0 and "None in progress." in page.inner_text("main")
    ctx.close()


def test_the_new_pages_at_both_sizes_light_and_dark_axe_and_screenshots(
    served: tuple[str, Config],
    media: MediaHost,
    browser: Any,  # noqa: F811
) -> None:
    server, _ = served
    setup = browser.new_context(viewport=DESKTOP)
    subscribed_phone(setup.new_page(), server, media)
    setup.close()
    source = axe_source()
    failures: dict[str, Any] = {}
    for size_name, size in (("390", PHONE), ("1280", DESKTOP)):
        for scheme in ("light", "dark"):
            ctx = browser.new_context(viewport=size, color_scheme=scheme)
            page = ctx.new_page()
            sign_in(page, server)
            for name, go in NEW_PAGES:
                go(page, server)
                label = f"listen-{name}-{size_name}-{scheme}"
                screenshot(page, label)
                found = check_accessibility(page, source)
                if found:
                    failures[label] = found
                width = page.evaluate("() => document.documentElement.scrollWidth")
                assert width <= size["width"], (label, width)
            ctx.close()
    assert not failures, violations_text(failures)  # type: ignore[arg-type]


def _episode(page: Any, server: str) -> None:
    open_episode(page, server, "Harbour lights")


def _podcast(page: Any, server: str) -> None:
    page.goto(server + "/ui/subscriptions")
    page.get_by_role("link", name="Sea Stories").click()


def _search(page: Any, server: str) -> None:
    page.goto(server + "/ui/")
    page.get_by_label("Find a podcast or an episode").fill("harb")
    page.get_by_role("button", name="Search").click()
    assert page.locator("a.episode").all_inner_texts() == ["Harbour lights"]


def _stats(page: Any, server: str) -> None:
    page.goto(server + "/ui/")
    page.get_by_role("link", name="Listening statistics").click()
    # weeks, one podcast, the months since the first play (the phone's, 2026-11-20)
    today = time.gmtime()
    months = (today.tm_year - 2026) * 12 + today.tm_mon - 11 + 1
    assert page.locator(".bars li").count() == 12 + 1 + months


NEW_PAGES: list[tuple[str, Callable[[Any, str], None]]] = [
    ("episode", _episode),
    ("podcast", _podcast),
    ("search", _search),
    ("stats", _stats),
    ("overview", lambda page, server: page.goto(server + "/ui/")),
    ("history", lambda page, server: page.goto(server + "/ui/history")),
]
