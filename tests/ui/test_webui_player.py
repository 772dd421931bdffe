"""The mini-player's server side, on SQLite and on PostgreSQL: player.json (the
owner's episodes only), the speed per podcast (checked, CSRF-checked, kept per
person and podcast), Remove from Continue listening (nothing for the apps, back
after a later play, paged list), times in show notes as links that stay sanitized,
and the player's schema step from a database at the step before."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.feeds import url_key
from podsync.storage.migrations import sqlite as sqlite_migrations
from podsync.store import feed_info
from podsync.web.ui.note_links import with_time_links
from tests.conftest import MakeConfig
from tests.support.feed_site import FeedSite
from tests.support.migration_support import add_user, database_at
from tests.ui.test_webui_episodes import app_for, links, own, pull
from tests.ui.test_webui_http import sign_in
from tests.ui.test_webui_podcast_episodes import play, site, subscribe, upload

pytestmark = pytest.mark.both_engines
__all__ = ["site"]

Client = TestClient[Any, Any]
TITLE = "Episode 5: a conversation about things"

# The schema step of the player's tables (speed per podcast, chapters).
PLAYER_STEP = 27


async def an_episode_in_progress(ui: Client, site: FeedSite) -> tuple[str, str]:
    """alice subscribed, 10 minutes into episode 5: (CSRF token, its page's path)."""
    csrf = await sign_in(ui)
    show = site.url("/show.xml")
    await subscribe(ui, csrf, show)
    await upload(ui, [play(show, 5, "2026-11-10T08:00:00", 600)])
    return csrf, (await links(ui, "/ui/history"))[TITLE]


async def test_player_json_and_speed_per_podcast(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    csrf, href = await an_episode_in_progress(ui, site)
    answer = await ui.get(href + "/player.json")
    assert answer.status == 200 and answer.headers["Cache-Control"] == "no-store"
    info = await answer.json()
    assert info["title"] == TITLE and info["position"] == 600 and info["total"] == 3000
    assert info["audio"] == "https://cdn.show.example/5.mp3" and info["speed"] == 1
    assert info["page"] == href and info["podcast_url"].startswith("/ui/podcasts/")
    assert info["ref"] == href.rsplit("/", 1)[1] and info["chapters"] is None
    # Bad speeds change nothing; a good one is kept for the podcast.
    for bad in ("0.5", "3.5", "fast", "", "nan", "1e9"):
        refused = await ui.post(href + "/speed", data={"csrf": csrf, "speed": bad}, headers=own(ui))
        assert refused.status == 400, bad
        assert "0.8 to 3" in (await refused.json())["message"]
    forged = await ui.post(href + "/speed", data={"speed": "2"}, headers=own(ui))
    assert forged.status == 403
    assert (await (await ui.get(href + "/player.json")).json())["speed"] == 1
    saved = await ui.post(href + "/speed", data={"csrf": csrf, "speed": "1.75"}, headers=own(ui))
    assert saved.status == 200 and (await saved.json())["speed"] == 1.75
    # Another episode of the same podcast plays at it; nothing reached the apps.
    other = await links(ui, "/ui/search?q=conversation")
    assert len(other) > 1
    for path in other.values():
        assert (await (await ui.get(path + "/player.json")).json())["speed"] == 1.75
    assert [a["action"] for a in await pull(ui)] == ["play"]
    # bob: not his episode.
    await ui.post("/ui/logout", data={"csrf": csrf}, headers=own(ui))
    bob = await sign_in(ui, "bob")
    assert (await ui.get(href + "/player.json")).status == 404
    theirs = await ui.post(href + "/speed", data={"csrf": bob, "speed": "2"}, headers=own(ui))
    assert theirs.status == 404


async def test_remove_from_continue_listening_until_played_again(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    csrf, href = await an_episode_in_progress(ui, site)
    ref = href.rsplit("/", 1)[1]
    overview = await (await ui.get("/ui/")).text()
    assert f'data-play="{ref}"' in overview and "Remove from Continue listening" in overview
    before = await pull(ui)
    removed = await ui.post(
        "/ui/continue/remove", data={"csrf": csrf, "episode": ref}, headers=own(ui)
    )
    assert removed.status == 200 and "Removed from Continue listening" in await removed.text()
    assert f'data-play="{ref}"' not in await removed.text()
    assert await pull(ui) == before  # the apps see nothing
    missing = await ui.post(
        "/ui/continue/remove", data={"csrf": csrf, "episode": "999999"}, headers=own(ui)
    )
    assert missing.status == 404
    # A later play shows it again.
    await upload(ui, [play(site.url("/show.xml"), 5, "2030-01-01T08:00:00", 900)])
    assert f'data-play="{ref}"' in await (await ui.get("/ui/")).text()


async def test_continue_listening_is_paged_not_capped(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    show = site.url("/show.xml")
    await subscribe(ui, csrf, show)
    await upload(ui, [play(show, n, f"2026-11-10T08:{n:02d}:00", 60 + n) for n in range(1, 24)])
    first = await (await ui.get("/ui/")).text()
    assert first.count("data-play=") == 10 and 'href="/ui/?continue=2#h-continue"' in first
    third = await (await ui.get("/ui/?continue=3")).text()
    assert third.count("data-play=") == 3 and "continue=4" not in third
    past = await (await ui.get("/ui/?continue=99")).text()
    assert past.count("data-play=") == 0 and "No more in progress" in past


def test_times_in_notes_become_seek_links_and_stay_sanitized() -> None:
    notes = (
        "<p>At 12:34 and 1:02:03, not 2026-11-20T08:00:00, 3.14:15 or 99:99.</p>"
        '<p><a href="https://x.example/?q=>12:34">12:34 already a link</a></p>'
    )
    out = with_time_links(notes, "42")
    assert out.count("data-seek=") == 2
    assert '<a href="/ui/episodes/42?t=754" data-seek="754" data-episode="42"' in out
    assert 'data-seek="3723"' in out and "?t=3723" in out
    assert ">12:34 already a link</a>" in out  # no link inside a link
    # What the feed writes cannot borrow the attributes: they are the transform's only.
    forged = with_time_links(
        '<a href="javascript:alert(1)" data-seek="1" onclick="x()">y</a> 1:00', "42"
    )
    assert "javascript" not in forged and "onclick" not in forged
    assert forged.count("data-seek=") == 1 and 'data-seek="60"' in forged
    assert with_time_links("<p>1:00</p>", "../x") == "<p>1:00</p>"  # a bad id: untouched
    assert re.search(r"<script", with_time_links("<script>1:00</script>", "1")) is None


async def test_the_player_step_from_the_step_before(
    make_config: MakeConfig, db_engine: str
) -> None:
    config = make_config()
    assert len(sqlite_migrations.MIGRATIONS) >= PLAYER_STEP
    before = PLAYER_STEP - 1
    async with database_at(config, db_engine, before) as db:
        alice = await add_user(db, "alice")
        async with db.write() as conn:
            await feed_info.add_feed(conn, url_key("https://a.example/f"), "https://a.example/f", 0)
            await conn.execute("UPDATE feed_info SET etag = 'e1', last_modified = 'm1'")
    from podsync.storage.engine import create_engine

    db = create_engine(config.database)
    await db.open()
    try:
        async with db.write() as conn:
            await conn.execute(
                "INSERT INTO podcast_speeds (user_id, podcast_key, speed, set_at) "
                "VALUES (?, 'k', 150, 0)",
                (alice,),
            )
            row = await conn.fetch_one("SELECT etag, last_modified FROM feed_info")
            assert tuple(row) == (None, None)  # each feed read whole again: its chapters
            chapters = await conn.fetch_one("SELECT count(chapters) FROM feed_episodes")
            assert chapters[0] == 0
        with pytest.raises(Exception, match=r"(?i)check"):
            async with db.write() as conn:
                await conn.execute(
                    "INSERT INTO podcast_speeds (user_id, podcast_key, speed, set_at) "
                    "VALUES (?, 'j', 500, 0)",
                    (alice,),
                )
    finally:
        await db.close()
