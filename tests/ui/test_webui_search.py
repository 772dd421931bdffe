"""Find an episode by words of its title (`/ui/search`), on SQLite (FTS5) and on
PostgreSQL (GIN): across all of the person's podcasts and only theirs, every word the
start of a title's word, case and accents folded, newest first, paged, each result
with its podcast, date and state linking to its page; input with nothing to look
for is the page saying so; and schema step 22 on a database of the release before
(the titles kept then are found)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.feeds import url_key
from podsync.services.episode_search import SEARCH_PAGE
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig
from tests.support.feed_site import FeedSite, rss
from tests.support.gpodder_support import basic
from tests.support.migration_support import add_user, database_at
from tests.ui.test_webui_episodes import app_for, own, text_of
from tests.ui.test_webui_http import sign_in
from tests.ui.test_webui_podcast_episodes import fetching, play, site, subscribe, upload

pytestmark = pytest.mark.both_engines
__all__ = ["site"]

Client = TestClient[Any, Any]
STEP = next(n for n, s in enumerate(MIGRATIONS) if getattr(s, "__name__", "") == "episode_pages")


async def found(ui: Client, query: str) -> list[str]:
    page = await ui.get("/ui/search", params={"q": query})
    assert page.status == 200
    assert page.headers["Cache-Control"] == "no-store"
    return list(await links_of(await page.text()))


async def links_of(html: str) -> dict[str, str]:
    return {t: h for h, t in re.findall(r'<a class="episode" href="([^"]+)">([^<]*)</a>', html)}


async def test_words_of_titles_across_the_persons_podcasts_paged_with_state(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    site.feed = rss(episodes=40)  # "Episode n: a conversation about things"
    show = site.url("/show.xml")
    await subscribe(ui, csrf, show)
    site.feed = rss("Économie", episodes=3, prefix="Économie du café, épisode")
    other = site.url("/show.xml?eco")
    await subscribe(ui, csrf, other)
    await upload(ui, [play(show, 40, "2026-11-10T08:00:00", 600)])
    # Case, accents and the start of words; every word must be there.
    assert await found(ui, "ECONOMIE cafe") == [
        f"Économie du café, épisode {n}: a conversation about things" for n in (3, 2, 1)
    ]
    second = "Économie du café, épisode 2: a conversation about things"
    assert await found(ui, "CAFÉ épi 2") == [second]
    assert await found(ui, "episode 39 conv") == ["Episode 39: a conversation about things"]
    assert await found(ui, "conversation nowhere") == []
    # Across both podcasts, newest first (the second feed's items are dated as the
    # first's 1 to 3), SEARCH_PAGE a page, with the next page linked.
    page = await ui.get("/ui/search", params={"q": "things"})
    html = await page.text()
    first = list(await links_of(html))
    assert len(first) == SEARCH_PAGE and first[0] == "Episode 40: a conversation about things"
    words = text_of(html)
    assert "In progress" in words and "10:00 of 50:00" in words  # the play of episode 40
    following = re.search(r'href="(/ui/search\?q=things&amp;page=2)"', html)
    assert following is not None
    rest = await ui.get(following.group(1).replace("&amp;", "&"))
    assert len(await links_of(await rest.text())) == 40 + 3 - SEARCH_PAGE
    # Each result links to its page, and the podcast's page.
    href = (await links_of(html))["Episode 40: a conversation about things"]
    episode = await ui.get(href)
    assert episode.status == 200 and "10:00 of 50:00" in text_of(await episode.text())
    assert "/ui/podcasts/" in html
    # Nothing to look for: the page says so, no 500 for anything typed.
    for typed in ("", "!!! ---", "\u00b2", "x" * 5000, "%", '"', "*", "a OR b NEAR(c)"):
        answer = await ui.get("/ui/search", params={"q": typed})
        assert answer.status == 200, typed
    said = text_of(await (await ui.get("/ui/search", params={"q": "!!!"})).text())
    assert "no letters or digits" in said
    beyond = await ui.get("/ui/search", params={"q": "things", "page": "99999999"})
    assert beyond.status == 200
    # Bob subscribes to none of it: he finds nothing of Alice's.
    await ui.post("/ui/logout", data={"csrf": csrf}, headers=own(ui))
    await sign_in(ui, "bob")
    assert await found(ui, "things") == []


async def test_the_step_on_a_database_of_the_release_before(
    aiohttp_client: Any, make_config: MakeConfig, db_engine: str, site: FeedSite
) -> None:
    """Titles the fetcher kept before step 22 are found after it (the step makes
    their words and indexes them)."""
    config = fetching(make_config)
    show = site.url("/show.xml")
    async with database_at(config, db_engine, STEP) as db:
        await add_user(db, "alice", PASSWORD)
        async with db.write() as conn:
            # Checked lately: the pruner, at start, keeps a feed nobody subscribes
            # to (yet) for an hour after its last check.
            await conn.execute(
                "INSERT INTO feed_info (url_key, feed_url, title, fetched_at, checked_at, "
                "next_try_at) VALUES (?, ?, 'Old Show', 1, ?, ?)",
                (url_key(show), show, timestamps.now_us(), 2**62),
            )
            await conn.execute_many(
                "INSERT INTO feed_episodes (url_key, episode_url, guid, title) VALUES (?, ?, ?, ?)",
                [(url_key(show), f"https://cdn.example/{n}.mp3", f"g{n}", f"Ölmühle Nr. {n}")
                 for n in (1, 2)],
            )  # fmt: skip
    ui: Client = await aiohttp_client(create_app(config))  # migrates
    # An app subscribes (the feed is not due: nothing is fetched); its old titles
    # are found, by words made of them by the step.
    added = await ui.post(
        "/api/2/subscriptions/alice/phone.json", json={"add": [show], "remove": []},
        headers=basic(),
    )  # fmt: skip
    assert added.status == 200
    await sign_in(ui)
    assert sorted(await found(ui, "olmuhle")) == ["Ölmühle Nr. 1", "Ölmühle Nr. 2"]
    assert await found(ui, "ÖLMÜHLE 2") == ["Ölmühle Nr. 2"]
