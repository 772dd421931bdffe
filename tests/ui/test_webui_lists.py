"""New episodes, Up next, bulk marks and staying in place, on SQLite and on
PostgreSQL, through a real app with a feed served on loopback and plays uploaded
through the gpodder API: the inbox lists what a podcast published since the person
subscribed, newest first, less what they played and what they dismissed; its count
is on the navigation; the queue is added to, reordered and emptied with forms (no
script), and `/ui/up-next/next` answers the player; every form comes back to the
row it was sent from; bulk marks reach the apps as play actions; search finds a
podcast's title and words of show notes, and within one podcast."""

from __future__ import annotations

import re
import time
from email.utils import formatdate
from html import escape
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp.test_utils import TestClient

from tests.support.feed_site import FeedSite
from tests.support.gpodder_support import basic
from tests.ui.test_webui_episodes import app_for, own, text_of
from tests.ui.test_webui_http import sign_in
from tests.ui.test_webui_podcast_episodes import play, site, subscribe, upload

pytestmark = pytest.mark.both_engines
__all__ = ["site"]

Client = TestClient[Any, Any]
ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd"
ROW = re.compile(
    r'<li id="(ep-[0-9a-f]+)"[^>]*>.*?<a class="episode" href="([^"]+)">([^<]*)</a>', re.S
)


def feed(title: str, old: int, new: int, notes: str = "Plain notes", shift: int = 0) -> bytes:
    """`old` items published a year ago, `new` ones published after now (so after
    any subscription made by the test), newest first; item n's notes say
    "<notes> n"."""
    now = time.time() + shift
    dates = [now + 3600 * (new - k) for k in range(new)]
    dates += [now - 86400 * 365 - 3600 * k for k in range(old)]
    items = []
    for k, when in enumerate(dates):
        n = len(dates) - k
        items.append(
            f"<item><title>{escape(title)} episode {n}</title><guid>{title}-{n}</guid>"
            f"<pubDate>{formatdate(when, usegmt=True)}</pubDate>"
            f'<enclosure url="https://cdn.example/{title}/{n}.mp3" type="audio/mpeg"/>'
            f"<description>{escape(f'<p>{notes} {n}</p>')}</description>"
            f"<itunes:duration>00:20:00</itunes:duration></item>"
        )
    return (
        f'<?xml version="1.0"?><rss version="2.0" xmlns:itunes="{ITUNES}"><channel>'
        f"<title>{escape(title)}</title><link>https://show.example/</link>"
        f"<description>All about {escape(title)}, weekly.</description>"
        + "".join(items)
        + "</channel></rss>"
    ).encode()


async def rows(ui: Client, path: str) -> list[tuple[str, str, str]]:
    """(anchor, href, title) of each episode row of a page."""
    page = await ui.get(path)
    assert page.status == 200, path
    return ROW.findall(await page.text())


async def post(ui: Client, path: str, data: dict[str, Any] | list[tuple[str, str]]) -> str:
    """POST a form without following the redirect; where it sends the browser."""
    answer = await ui.post(path, data=data, headers=own(ui), allow_redirects=False)
    assert answer.status == 303, (answer.status, await answer.text())
    return answer.headers["Location"]


async def gpodder_pull(ui: Client) -> list[dict[str, Any]]:
    pulled = await ui.get("/api/2/episodes/alice.json", headers=basic())
    assert pulled.status == 200
    actions: list[dict[str, Any]] = (await pulled.json())["actions"]
    return actions


async def test_new_episodes_since_subscribing_less_played_and_dismissed(
    aiohttp_client: Any, make_config: Any, site: FeedSite
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    site.feed = feed("Tides", old=3, new=4)
    tides = site.url("/show.xml?tides")
    tides_page = await subscribe(ui, csrf, tides)
    site.feed = feed("Gulls", old=2, new=2, shift=1800)
    await subscribe(ui, csrf, site.url("/show.xml?gulls"))
    new = await rows(ui, "/ui/new")
    # Newest first across podcasts; items from before the subscription are not new.
    assert [t for _, _, t in new] == [
        "Tides episode 7", "Tides episode 6", "Gulls episode 4", "Tides episode 5",
        "Gulls episode 3", "Tides episode 4",
    ]  # fmt: skip
    html = await (await ui.get("/ui/new")).text()
    assert re.search(r'href="/ui/new"[^>]*>New episodes <span class="count">6<', html)
    # Each row: play (the player's link), add to Up next, mark played, dismiss.
    anchor, href, _ = new[0]
    ref = href.rsplit("/", 1)[1]
    assert f'data-play="{ref}" href="/ui/episodes/{ref}"' in html
    # A play in an app takes an episode out; so does Dismiss, back to its row.
    await upload(ui, [play(tides, "https://cdn.example/Tides/6.mp3", "2026-11-10T08:00:00", 60)])
    where = await post(
        ui, "/ui/new/dismiss", {"csrf": csrf, "episode": ref, "back": f"/ui/new#{anchor}"}
    )
    assert where == f"/ui/new?done=dismissed#{anchor}"
    assert [t for _, _, t in await rows(ui, "/ui/new")] == [
        "Gulls episode 4", "Tides episode 5", "Gulls episode 3", "Tides episode 4",
    ]  # fmt: skip
    # Mark played from the inbox comes back to the row too.
    anchor, href, _ = (await rows(ui, "/ui/new"))[0]
    where = await post(
        ui,
        "/ui/episodes/mark",
        {"csrf": csrf, "episode": href.rsplit("/", 1)[1], "played": "yes",
         "back": f"/ui/new#{anchor}"},
    )  # fmt: skip
    assert where == f"/ui/new?done=played#{anchor}"
    # "Mark all played" for one podcast: play actions the apps pull.
    sync_id = tides_page.rsplit("/", 1)[1]
    where = await post(
        ui,
        "/ui/episodes/mark-many",
        {"csrf": csrf, "podcast": sync_id, "new": "yes", "back": "/ui/new"},
    )
    assert parse_qs(urlsplit(where).query)["marked"] == ["2"]
    assert [t for _, _, t in await rows(ui, "/ui/new")] == ["Gulls episode 3"]
    pulled = {(a["episode"], a["action"], a.get("position")) for a in await gpodder_pull(ui)}
    for n in (4, 5):
        assert (f"https://cdn.example/Tides/{n}.mp3", "play", 1200) in pulled
    # Everything published before a day (tomorrow: every new episode).
    tomorrow = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 2 * 86400))
    await post(ui, "/ui/episodes/mark-many", {"csrf": csrf, "before": tomorrow, "back": "/ui/new"})
    assert await rows(ui, "/ui/new") == []
    assert "Nothing new" in text_of(await (await ui.get("/ui/new")).text())
    # Bad input is a 400 page that changes nothing; another's episode a 404.
    for data in ({"before": "yesterday"}, {}):
        answer = await ui.post(
            "/ui/episodes/mark-many", data={"csrf": csrf, **data}, headers=own(ui)
        )
        assert answer.status == 400
    answer = await ui.post(
        "/ui/new/dismiss", data={"csrf": csrf, "episode": "999999"}, headers=own(ui)
    )
    assert answer.status == 404


async def test_up_next_forms_and_the_players_next_episode(
    aiohttp_client: Any, make_config: Any, site: FeedSite
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    site.feed = feed("Tides", old=4, new=0)
    podcast = await subscribe(ui, csrf, site.url("/show.xml?tides"))
    listed = await rows(ui, podcast)
    assert [t for _, _, t in listed] == [f"Tides episode {n}" for n in (4, 3, 2, 1)]
    refs = {t: h.rsplit("/", 1)[1] for _, h, t in listed}
    anchors = {t: a for a, _, t in listed}
    # Added from the podcast page's rows: back to the row, with its page and filter.
    for n in (4, 2, 3):
        title = f"Tides episode {n}"
        back = f"{podcast}?show=not_played#{anchors[title]}"
        where = await post(
            ui, "/ui/up-next/add", {"csrf": csrf, "episode": refs[title], "back": back}
        )
        assert where == f"{podcast}?show=not_played&done=queued#{anchors[title]}"
    queue = await rows(ui, "/ui/up-next")
    assert [t for _, _, t in queue] == ["Tides episode 4", "Tides episode 2", "Tides episode 3"]
    page = await (await ui.get("/ui/up-next")).text()
    assert "Up next in this browser and on podsync" in page
    policy = (await ui.get("/ui/up-next")).headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    # One policy for every page (htmx keeps the first page's): no directive twice.
    directives = [part.split()[0] for part in policy.split(";") if part.strip()]
    assert len(directives) == len(set(directives)), policy
    assert policy == (await ui.get("/ui/")).headers["Content-Security-Policy"]
    # The podcast page says which are queued.
    assert text_of(await (await ui.get(podcast)).text()).count("In Up next") == 3
    # Reorder with buttons (no script), back to the row moved.
    anchor = anchors["Tides episode 3"]
    where = await post(
        ui,
        "/ui/up-next/move",
        {"csrf": csrf, "episode": refs["Tides episode 3"], "move": "up",
         "back": f"/ui/up-next#{anchor}"},
    )  # fmt: skip
    assert where == f"/ui/up-next?done=moved#{anchor}"
    assert [t for _, _, t in await rows(ui, "/ui/up-next")] == [
        "Tides episode 4", "Tides episode 3", "Tides episode 2",
    ]  # fmt: skip
    await post(ui, "/ui/up-next/move", {"csrf": csrf, "episode": refs["Tides episode 2"],
                                         "move": "top", "back": "/ui/up-next"})  # fmt: skip
    # The drag's form: before another entry.
    moved = await ui.post(
        "/ui/up-next/move",
        data={"csrf": csrf, "episode": refs["Tides episode 2"], "before": "", "script": "yes"},
        headers=own(ui),
    )
    assert moved.status == 200 and (await moved.json()) == {"moved": True}
    assert [t for _, _, t in await rows(ui, "/ui/up-next")] == [
        "Tides episode 4", "Tides episode 3", "Tides episode 2",
    ]  # fmt: skip
    # The player: the head just played comes off, the next one's JSON comes back.
    answer = await ui.get("/ui/up-next/next", params={"after": refs["Tides episode 4"]})
    assert answer.status == 200
    body = await answer.json()
    assert set(body) == {
        "ref", "title", "podcast", "audio", "position", "total", "artwork", "speed",
        "chapters", "page",
    }  # fmt: skip
    assert body["title"] == "Tides episode 3" and body["podcast"] == "Tides"
    assert body["audio"] == "https://cdn.example/Tides/3.mp3" and body["total"] == 1200
    assert body["page"] == f"/ui/episodes/{body['ref']}"
    assert [t for _, _, t in await rows(ui, "/ui/up-next")] == [
        "Tides episode 3", "Tides episode 2",
    ]  # fmt: skip
    # Autoplay off: 204, the queue stays.
    await post(ui, "/ui/up-next/autoplay", {"csrf": csrf, "autoplay": "no", "back": "/ui/up-next"})
    off = await ui.get("/ui/up-next/next", params={"after": refs["Tides episode 3"]})
    assert off.status == 204
    await post(ui, "/ui/up-next/autoplay", {"csrf": csrf, "autoplay": "yes", "back": "/ui/up-next"})
    # Remove; an empty queue answers 204.
    for title in ("Tides episode 3", "Tides episode 2"):
        await post(ui, "/ui/up-next/remove", {"csrf": csrf, "episode": refs[title]})
    assert await rows(ui, "/ui/up-next") == []
    empty = await ui.get("/ui/up-next/next", params={"after": refs["Tides episode 3"]})
    assert empty.status == 204
    # Nothing a browser sends gives a 500; another person's episode is not theirs.
    for data in ({"episode": "x" * 5000}, {"episode": "s1-gZZZ"}, {}):
        answer = await ui.post("/ui/up-next/add", data={"csrf": csrf, **data}, headers=own(ui))
        assert answer.status in (400, 404), data
    bad = await ui.post("/ui/up-next/move", data={"csrf": csrf, "episode": refs["Tides episode 1"],
                                                  "move": "sideways"}, headers=own(ui))  # fmt: skip
    assert bad.status == 400
    await ui.post("/ui/logout", data={"csrf": csrf}, headers=own(ui))
    bob = await sign_in(ui, "bob")
    answer = await ui.post(
        "/ui/up-next/add", data={"csrf": bob, "episode": refs["Tides episode 1"]}, headers=own(ui)
    )
    assert answer.status == 404


async def test_bulk_marks_on_a_podcast_page_and_richer_rows(
    aiohttp_client: Any, make_config: Any, site: FeedSite
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    site.feed = feed("Tides", old=6, new=0)
    tides = site.url("/show.xml?tides")
    podcast = await subscribe(ui, csrf, tides)
    html = await (await ui.get(podcast)).text()
    words = text_of(html)
    # The feed's description, each episode's length, counts on the filter pills.
    assert "All about Tides, weekly." in words
    assert "20:00" in words
    assert "All (6)" in words and "Not played (6)" in words and "Finished (0)" in words
    listed = await rows(ui, podcast)
    refs = [h.rsplit("/", 1)[1] for _, h, _ in listed]
    # Several chosen with check boxes (a form the boxes name by id).
    assert 'form="bulk"' in html
    where = await post(
        ui,
        "/ui/episodes/mark-many",
        [("csrf", csrf), ("episode", refs[0]), ("episode", refs[2]),
         ("back", f"{podcast}?page=1#{listed[2][0]}")],
    )  # fmt: skip
    assert where == f"{podcast}?page=1&marked=2&unknown=0#{listed[2][0]}"
    words = text_of(await (await ui.get(where.split("#")[0])).text())
    assert "2 marked played" in words and "Finished (2)" in words
    # "This and older": episode 3 and everything published before it.
    up_to = re.search(
        r'name="up_to" value="(\d+)">\s*<input type="hidden" name="back" '
        rf'value="[^"]*#{listed[3][0]}"',
        html,
    )
    assert up_to is not None
    sync_id = podcast.rsplit("/", 1)[1]
    where = await post(
        ui,
        "/ui/episodes/mark-many",
        {"csrf": csrf, "podcast": sync_id, "up_to": up_to.group(1),
         "back": f"{podcast}#{listed[3][0]}"},
    )  # fmt: skip
    assert where.endswith(f"marked=3&unknown=0#{listed[3][0]}")
    words = text_of(await (await ui.get(podcast)).text())
    assert "Finished (5)" in words and "Not played (1)" in words
    finished = {a["episode"] for a in await gpodder_pull(ui) if a["position"] == 1200}
    assert finished == {f"https://cdn.example/Tides/{n}.mp3" for n in (6, 4, 3, 2, 1)}
    # The subscriptions list: the newest episode's date and the unplayed count; Refresh
    # and Unsubscribe are on the podcast's page, not on the list.
    listing = await (await ui.get("/ui/subscriptions")).text()
    words = text_of(listing)
    assert "latest episode" in words and "1 unplayed" in words
    assert "/ui/subscriptions/unsubscribe" not in listing
    assert "/ui/subscriptions/refresh" not in listing


async def test_search_finds_podcast_titles_and_show_notes_and_within_one_podcast(
    aiohttp_client: Any, make_config: Any, site: FeedSite
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    site.feed = feed("Harbour Tales", old=3, new=0, notes="Lighthouse keepers")
    harbour = await subscribe(ui, csrf, site.url("/show.xml?harbour"))
    site.feed = feed("Storm Watch", old=2, new=0, notes="Lighthouse weather")
    await subscribe(ui, csrf, site.url("/show.xml?storm"))
    page = await (await ui.get("/ui/search", params={"q": "harb"})).text()
    # A podcast result first, then episodes.
    assert page.index('class="podcast-found"') < page.index('class="episode"')
    assert re.search(rf'<a class="podcast-found" href="{harbour}">Harbour Tales</a>', page)
    # Words of show notes.
    found = [t for _, _, t in await rows(ui, "/ui/search?q=lighthouse")]
    assert sorted(found) == sorted(
        [f"Harbour Tales episode {n}" for n in (1, 2, 3)]
        + [f"Storm Watch episode {n}" for n in (1, 2)]
    )
    assert [t for _, _, t in await rows(ui, "/ui/search?q=weather+2")] == ["Storm Watch episode 2"]
    # Within one podcast, from its page's form.
    assert 'name="podcast" value="' in await (await ui.get(harbour)).text()
    sync_id = harbour.rsplit("/", 1)[1]
    within = await rows(ui, f"/ui/search?q=lighthouse&podcast={sync_id}")
    assert sorted(t for _, _, t in within) == [f"Harbour Tales episode {n}" for n in (1, 2, 3)]
    # Another's podcast: nothing, no error.
    assert await rows(ui, "/ui/search?q=lighthouse&podcast=nope") == []


def stretch(feed_url: str, n: int, when: str, start: int, end: int) -> dict[str, Any]:
    return {"podcast": feed_url, "episode": f"https://cdn.example/Tides/{n}.mp3",
            "action": "play", "timestamp": when, "started": start, "position": end,
            "total": 1200, "device": "phone"}  # fmt: skip


async def test_the_history_by_day_and_episode_with_a_date_jump(
    aiohttp_client: Any, make_config: Any, site: FeedSite
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    site.feed = feed("Tides", old=3, new=0)
    tides = site.url("/show.xml?tides")
    podcast = await subscribe(ui, csrf, tides)
    await upload(
        ui,
        [stretch(tides, 3, "2026-11-10T08:00:00", 0, 600),
         stretch(tides, 3, "2026-11-10T09:00:00", 600, 1200),
         stretch(tides, 3, "2026-11-10T10:00:00", 0, 300),
         stretch(tides, 2, "2026-11-10T11:00:00", 0, 120),
         stretch(tides, 2, "2026-11-08T07:00:00", 0, 60)],
    )  # fmt: skip
    # One click, one row: Mark not played (a play at 0 and a `new`).
    refs = {t: h.rsplit("/", 1)[1] for _, h, t in await rows(ui, podcast)}
    await post(ui, "/ui/episodes/mark", {"csrf": csrf, "episode": refs["Tides episode 1"],
                                          "played": "no", "back": podcast})  # fmt: skip
    html = await (await ui.get("/ui/history")).text()
    days = re.findall(r'<h2 id="d-([0-9-]+)" class="day">([^<]*)</h2>', html)
    assert [d for d, _ in days][1:] == ["2026-11-10", "2026-11-08"]
    assert days[0][1] == "Today" and days[1][1] == "Tuesday 2026-11-10"
    words = text_of(html)
    assert words.count("Tides episode 1") == 1 and "Marked not played" in words
    assert "Marked new" not in words
    assert words.count("Tides episode 3") == 1
    assert "Listened 25 min · 3 plays" in words
    assert words.count("Tides episode 2") == 2  # two days
    # The date jump: that day and before it.
    jumped = await (await ui.get("/ui/history", params={"day": "2026-11-09"})).text()
    assert re.findall(r'<h2 id="d-([0-9-]+)"', jumped) == ["2026-11-08"]
    for day in ("nonsense", "0001-01-01", "2026-13-40", "9999-12-31"):
        assert (await ui.get("/ui/history", params={"day": day})).status == 200
    # Statistics: no empty months before the first play (the first, 2026-11-08).
    today = time.gmtime()
    months = (today.tm_year * 12 + today.tm_mon) - (2026 * 12 + 11) + 1
    stats = text_of(await (await ui.get("/ui/stats")).text())
    if months == 1:
        assert "This month:" in stats
    elif months < 12:
        assert f"The last {months} months:" in stats
