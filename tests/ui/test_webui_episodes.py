"""A page per episode (`/ui/episodes/<id>`), on SQLite and on PostgreSQL: what the feed
says of it (show notes sanitized, duration, date, links), the person's state, rows
of every list linking to it, another person's id a 404 page; Mark played / not
played as play actions of the device `web` that other devices pull (gpodder and
Nextcloud); the player's progress, CSRF-checked, refused with the problem named;
a podcast page's filters."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.services.accounts import AccountService
from tests.conftest import PASSWORD, MakeConfig, with_accounts
from tests.support.feed_site import FeedSite, rss
from tests.support.gpodder_support import basic
from tests.ui.test_webui_http import sign_in
from tests.ui.test_webui_podcast_episodes import act, fetching, play, site, subscribe, upload

pytestmark = pytest.mark.both_engines
__all__ = ["site"]

Client = TestClient[Any, Any]
EPISODE_LINK = re.compile(r'<a class="episode" href="(/ui/episodes/[^"]+)">([^<]*)</a>')
CDN = "https://cdn.show.example"


async def app_for(aiohttp_client: Any, make_config: MakeConfig) -> Client:
    async def seed(accounts: AccountService) -> None:
        await accounts.add_user("alice", PASSWORD)
        await accounts.add_user("bob", PASSWORD)

    config = fetching(make_config)
    await with_accounts(config, seed)
    from podsync.web.app import create_app

    client: Client = await aiohttp_client(create_app(config))
    return client


def own(ui: Client) -> dict[str, str]:
    return {"Origin": str(ui.make_url("")).rstrip("/")}


async def links(ui: Client, path: str) -> dict[str, str]:
    """The episode links of a page: title -> its page's path."""
    response = await ui.get(path)
    assert response.status == 200, path
    return {title: href for href, title in EPISODE_LINK.findall(await response.text())}


async def pull(ui: Client) -> list[dict[str, Any]]:
    """What another device's sync reads: every action since the start."""
    response = await ui.get("/api/2/episodes/alice.json?since=0", headers=basic())
    assert response.status == 200
    actions: list[dict[str, Any]] = (await response.json())["actions"]
    return actions


async def nextcloud_pull(ui: Client) -> list[dict[str, Any]]:
    response = await ui.get("/index.php/apps/gpoddersync/episode_action?since=0", headers=basic())
    assert response.status == 200
    actions: list[dict[str, Any]] = (await response.json())["actions"]
    return actions


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


async def test_an_episode_page_shows_the_feed_item_and_the_state_and_is_its_owners_only(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    site.feed = rss(episodes=5).replace(
        b"</description>",
        b"&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=&quot;https://t.example/p.gif&quot;&gt;"
        b"</description>",
    )
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    show = site.url("/show.xml")
    podcast = await subscribe(ui, csrf, show)
    await upload(ui, [play(show, 5, "2026-11-10T08:00:00", 600)])
    # Every list links to the page: the history, Continue listening, the podcast's.
    title = "Episode 5: a conversation about things"
    href = (await links(ui, "/ui/history"))[title]
    assert (await links(ui, "/ui/"))[title] == href
    on_podcast = await links(ui, podcast)
    assert on_podcast[title] == href and re.fullmatch(r"/ui/episodes/[0-9]+", href)
    page = await ui.get(href)
    assert page.status == 200
    assert page.headers["Cache-Control"] == "no-store"
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "media-src" in csp
    html = await page.text()
    words = text_of(html)
    assert f"<h1>{title}</h1>" in html
    assert "Length 5:00" in words  # itunes:duration 00:05:00
    assert "In progress 10:00 of 50:00 (20%)" in words  # the play's position of its total
    assert 'href="https://show.example/5"' in html and f'href="{CDN}/5.mp3"' in html
    assert f'src="{CDN}/5.mp3#t=600"' in html  # starts where the person stopped
    notes = html.split('class="notes">', 1)[1].split("</div>", 1)[0]
    assert '<a href="https://x.example/"' in notes
    assert "<script" not in notes and "<img" not in notes and "t.example" not in notes
    assert '<script src="/ui/static/player.js' in html and "position is not saved" in words
    # An episode never acted on has a page too; its links on the podcast page.
    fresh = await ui.get(on_podcast["Episode 4: a conversation about things"])
    assert fresh.status == 200 and "Not played" in text_of(await fresh.text())
    # Bob has no such episode: the same 404 page as an id that does not exist.
    await ui.post("/ui/logout", data={"csrf": csrf}, headers=own(ui))
    await sign_in(ui, "bob")
    untouched = on_podcast["Episode 4: a conversation about things"]
    for path in (href, untouched, "/ui/episodes/999999", "/ui/episodes/%C2%B2",
                 "/ui/episodes/s1-g%%%", "/ui/episodes/" + "9" * 40):  # fmt: skip
        refused = await ui.get(path)
        assert refused.status == 404, path
        assert "no such episode" in (await refused.text()), path


async def test_mark_played_and_not_played_reach_other_devices(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    site.feed = rss(episodes=3)
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    show = site.url("/show.xml")
    podcast = await subscribe(ui, csrf, show)
    fresh = (await links(ui, podcast))["Episode 3: a conversation about things"]
    ref = fresh.rsplit("/", 1)[1]
    # Played, from the podcast page's row (a form: no script).
    done = await ui.post(
        "/ui/episodes/mark",
        data={"csrf": csrf, "episode": ref, "played": "yes", "back": podcast + "?show=finished"},
        headers=own(ui),
        allow_redirects=False,
    )
    assert done.status == 303
    assert done.headers["Location"] == podcast + "?show=finished&done=played"
    finished = await links(ui, podcast + "?show=finished")
    assert list(finished) == ["Episode 3: a conversation about things"]
    assert "Episode 2: a conversation about things" in await links(ui, podcast + "?show=not_played")
    [action] = await pull(ui)
    assert action == {
        "podcast": show, "episode": f"{CDN}/3.mp3", "guid": "show-3", "action": "play",
        "device": "web", "timestamp": action["timestamp"], "started": 180, "position": 180,
        "total": 180,
    }  # fmt: skip
    [nc] = await nextcloud_pull(ui)
    assert (nc["position"], nc["total"], nc["device"]) == (180, 180, "web")
    devices = await ui.get("/api/2/devices/alice.json", headers=basic())
    assert {"id": "web", "caption": "Web browser"}.items() <= (await devices.json())[0].items()
    # Not played, from the episode's page: a play at 0 and a `new`.
    href = (await links(ui, podcast))["Episode 3: a conversation about things"]
    assert href != fresh  # it has its own id now; the feed item's id leads there
    moved = await ui.get(fresh, allow_redirects=False)
    assert moved.status == 302 and moved.headers["Location"] == href
    undone = await ui.post(
        "/ui/episodes/mark",
        data={"csrf": csrf, "episode": href.rsplit("/", 1)[1], "played": "no", "back": href},
        headers=own(ui),
    )
    assert undone.status == 200
    words = text_of(await undone.text())
    assert "Marked not played." in words and "Your state Not played" in words
    later = (await pull(ui))[1:]
    assert [(a["action"], a.get("position")) for a in later] == [("play", 0), ("new", None)]
    assert not await links(ui, podcast + "?show=finished")
    # Bad input: the page with the problem named, nothing written.
    for data in ({"episode": ref, "played": "maybe"}, {"episode": "nope", "played": "yes"}):
        refused = await ui.post("/ui/episodes/mark", data={"csrf": csrf, **data}, headers=own(ui))
        assert refused.status in (400, 404)
    no_csrf = await ui.post("/ui/episodes/mark", data={"episode": ref, "played": "yes"})
    assert no_csrf.status == 403
    assert len(await pull(ui)) == 3


async def test_progress_from_the_player_is_a_play_of_the_web_device(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    site.feed = rss(episodes=2)
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    show = site.url("/show.xml")
    await subscribe(ui, csrf, show)
    await upload(ui, [act(show, f"{CDN}/2.mp3", "download", "2026-11-10T08:00:00")])
    href = (await links(ui, "/ui/history"))["Episode 2: a conversation about things"]
    path = href + "/progress"
    saved = await ui.post(
        path, data={"csrf": csrf, "started": "60", "position": "95", "total": "600"},
        headers={**own(ui), "Accept": "application/json"},
    )  # fmt: skip
    assert saved.status == 200
    assert saved.headers["Cache-Control"] == "no-store"
    body = await saved.json()
    assert body["saved"] is True and body["state"] == "In progress"
    play_action = (await pull(ui))[-1]
    stored = (play_action["device"], play_action["started"], play_action["position"])
    assert stored == ("web", 60, 95)
    nc = (await nextcloud_pull(ui))[-1]
    assert (nc["position"], nc["started"], nc["device"]) == (95, 60, "web")
    for bad in ({"started": "²", "position": "1", "total": "9"},
                {"started": "0", "position": "1", "total": "0"},
                {"started": "0", "position": "-1", "total": "9"},
                {"started": "0", "position": "1", "total": "99999999999999999999"}):  # fmt: skip
        refused = await ui.post(path, data={"csrf": csrf, **bad}, headers=own(ui))
        assert refused.status == 400, bad
        assert (await refused.json())["saved"] is False
    gone = await ui.post(
        "/ui/episodes/424242/progress",
        data={"csrf": csrf, "started": "0", "position": "1", "total": "9"},
        headers=own(ui),
    )
    assert gone.status == 404
    forged = await ui.post(path, data={"csrf": "x", "started": "0", "position": "5", "total": "9"})
    assert forged.status == 403
    assert len(await pull(ui)) == 2
