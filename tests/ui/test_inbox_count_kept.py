"""The navigation's count of New episodes is on every signed-in page, so a process
keeps it while nothing it depends on has changed, and counts again after any change
that can move it: a subscription, a play from an app, a dismissal, a feed's new
items, an unsubscription. Each step compares the count on a light page with the
rows of /ui/new (the truth), on SQLite and on PostgreSQL, through a real app."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.feeds import url_key
from podsync.store import feed_info, inbox
from podsync.web.keys import DB, FEED_FETCHER
from tests.support.feed_site import FeedSite
from tests.support.gpodder_support import basic
from tests.ui.test_webui_episodes import app_for
from tests.ui.test_webui_http import sign_in
from tests.ui.test_webui_lists import feed, post, rows
from tests.ui.test_webui_podcast_episodes import play, site, subscribe, upload

pytestmark = pytest.mark.both_engines
__all__ = ["site"]

Client = TestClient[Any, Any]
COUNT = re.compile(r'href="/ui/new"[^>]*>New episodes(?: <span class="count">(\d+)<)?')


async def nav_count(ui: Client) -> int:
    page = await ui.get("/ui/account")
    assert page.status == 200
    found = COUNT.search(await page.text())
    assert found is not None
    return int(found.group(1) or 0)


async def agrees(ui: Client, expected: int) -> None:
    """The navigation's count is `expected`, and so many rows are on /ui/new."""
    assert await nav_count(ui) == expected
    assert len(await rows(ui, "/ui/new")) == expected


async def test_the_count_is_kept_until_something_it_follows_changes(
    aiohttp_client: Any, make_config: Any, site: FeedSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = 0
    candidates = inbox.candidates

    async def counting(*args: Any, **kwargs: Any) -> list[inbox.Candidate]:
        nonlocal counted
        counted += 1
        return await candidates(*args, **kwargs)

    monkeypatch.setattr(inbox, "candidates", counting)
    ui = await app_for(aiohttp_client, make_config)
    csrf = await sign_in(ui)
    assert await nav_count(ui) == 0
    site.feed = feed("Tides", old=2, new=4)
    tides = site.url("/show.xml?tides")
    await subscribe(ui, csrf, tides)
    # As if the subscription's fetch were two minutes ago (a feed is fetched again a
    # minute apart at the soonest).
    db = ui.server.app[DB]
    async with db.write() as conn:
        await conn.execute(
            "UPDATE feed_info SET fetched_at = fetched_at - 120000000, "
            "checked_at = checked_at - 120000000"
        )
    await agrees(ui, 4)
    # Nothing changed: pages read the stamp, not the items.
    before = counted
    for _ in range(3):
        assert await nav_count(ui) == 4
    assert counted == before
    # A play from an app.
    await upload(ui, [play(tides, "https://cdn.example/Tides/6.mp3", "2026-11-10T08:00:00", 60)])
    await agrees(ui, 3)
    # A dismissal.
    _, href, _ = (await rows(ui, "/ui/new"))[0]
    await post(ui, "/ui/new/dismiss", {"csrf": csrf, "episode": href.rsplit("/", 1)[1]})
    await agrees(ui, 2)
    # The feed publishes two more, fetched again.
    site.feed = feed("Tides", old=2, new=6)
    site.etag = '"v2"'
    async with db.read() as conn:
        due = await feed_info.due_state(conn, url_key(tides))
    fetcher = ui.server.app[FEED_FETCHER]
    assert fetcher is not None and due is not None
    before = counted
    await fetcher.fetch_one(due)
    await agrees(ui, 4)
    assert counted > before
    # Another podcast, then gone again (from an app).
    await subscribe(ui, csrf, site.url("/show.xml?gulls"))
    await agrees(ui, 10)
    gone = await ui.post(
        "/api/2/subscriptions/alice/phone.json",
        json={"add": [], "remove": [site.url("/show.xml?gulls")]},
        headers=basic(),
    )
    assert gone.status == 200, await gone.text()
    await agrees(ui, 4)
