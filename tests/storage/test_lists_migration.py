"""Schema step 25 (the web UI's fourth release) on a database of the release before,
on SQLite and on PostgreSQL: the show notes the fetcher kept before it are found by
their words after it, the full-text index of titles is gone and search still finds
titles, and the tables of Up next and of dismissed new episodes are there."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.feeds import url_key
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.web.app import create_app
from tests.conftest import PASSWORD
from tests.support.feed_site import FeedSite
from tests.support.gpodder_support import basic
from tests.support.migration_support import add_user, database_at
from tests.ui.test_webui_http import sign_in
from tests.ui.test_webui_lists import rows
from tests.ui.test_webui_podcast_episodes import site

pytestmark = pytest.mark.both_engines
__all__ = ["site"]

Client = TestClient[Any, Any]

LISTS_STEP = next(n for n, s in enumerate(MIGRATIONS) if getattr(s, "__name__", "") == "lists")


async def test_the_step_on_a_database_of_the_release_before(
    aiohttp_client: Any, make_config: Any, db_engine: str, site: FeedSite
) -> None:
    """Show notes the fetcher kept before the step are found by their words after
    it; the queue and the inbox have their tables."""
    config = make_config(feeds={"fetch_metadata": True, "allow_private": True})
    show = site.url("/show.xml?old")
    async with database_at(config, db_engine, LISTS_STEP) as db:
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
                "INSERT INTO feed_episodes (url_key, episode_url, guid, title, notes, words) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(url_key(show), f"https://cdn.example/{n}.mp3", f"g{n}", f"Number {n}",
                  f"<p>About the <em>Ölmühle</em> &amp; {'mill' if n == 1 else 'wheel'}</p>",
                  f"number {n}") for n in (1, 2)],
            )  # fmt: skip
    ui: Client = await aiohttp_client(create_app(config))  # migrates
    added = await ui.post(
        "/api/2/subscriptions/alice/phone.json", json={"add": [show], "remove": []},
        headers=basic(),
    )  # fmt: skip
    assert added.status == 200
    await sign_in(ui)
    assert sorted(t for _, _, t in await rows(ui, "/ui/search?q=olmuhle")) == [
        "Number 1", "Number 2",
    ]  # fmt: skip
    assert [t for _, _, t in await rows(ui, "/ui/search?q=mill")] == ["Number 1"]
    assert [t for _, _, t in await rows(ui, "/ui/search?q=number+2")] == ["Number 2"]
    for page in ("/ui/new", "/ui/up-next"):
        assert (await ui.get(page)).status == 200
