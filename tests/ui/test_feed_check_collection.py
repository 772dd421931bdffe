"""A Subscribe's check stores the feed it fetched (its row, then its episodes) a moment
before the subscription is written; the hourly pruner collects the feeds nobody
subscribes to. When the pruner ran in that moment it took the new row, the episodes'
write then named a feed that was gone, and the Subscribe page answered 500. The row
a check stores counts as checked now, so the pruner leaves it; a feed nobody
subscribes to still goes an hour later. Both engines, the real fetcher and pruner on
the app's database; only the moment is chosen."""

from __future__ import annotations

from typing import Any

import pytest

from podsync import timestamps
from podsync.config import Config
from podsync.feeds import url_key
from podsync.services.feed_info import COLLECT_AFTER_US, FeedInfoService, collect_unreferenced
from podsync.services.feeds.fetcher import FeedFetcher
from podsync.services.feeds.http import FeedClient
from podsync.storage.engine import create_engine
from podsync.store import feed_info
from podsync.web.app import create_app
from tests.support.feed_site import FeedSite
from tests.ui.test_webui_podcast_episodes import site

pytestmark = pytest.mark.both_engines
__all__ = ["site"]  # the feed site fixture, shared


@pytest.mark.parametrize("known_before", [False, True], ids=["new feed", "known, unsubscribed"])
async def test_a_feed_a_subscribe_checked_is_left_by_the_pruner_until_subscribed(
    aiohttp_client: Any,
    config: Config,
    site: FeedSite,
    monkeypatch: pytest.MonkeyPatch,
    known_before: bool,
) -> None:
    await aiohttp_client(create_app(config))  # the app makes the schema
    db = create_engine(config.database)
    await db.open()
    fetcher = FeedFetcher(db, FeedClient(True), refresh_hours=24)
    await fetcher.open()
    try:
        url = site.url("/show.xml")
        key = url_key(url)
        if known_before:  # a feed whose last subscriber left: collectable now
            async with db.write() as conn:
                await feed_info.add_feed(conn, key, url, timestamps.now_us())
        learned = await fetcher.parse(await fetcher.client.fetch(url, None, None))
        store_episodes = fetcher._store_episodes
        collected: list[tuple[int, int]] = []

        async def pruner_first(*args: Any) -> None:
            # The hourly pruner's pass, between the feed's row and its episodes.
            collected.append(await collect_unreferenced(db))
            await store_episodes(*args)

        monkeypatch.setattr(fetcher, "_store_episodes", pruner_first)
        await fetcher.keep_checked(url, key, learned)

        assert collected == [(0, 0)]
        found = (await FeedInfoService(db, True).for_feeds([url]))[url]
        assert found.title == "The Show" and found.fetched_at is not None
        # Nobody subscribed after all: the pruner takes it once its hour has passed.
        later = timestamps.now_us() + COLLECT_AFTER_US + 1_000_000
        assert (await collect_unreferenced(db, now=later))[0] == 1
        async with db.read() as conn:
            assert await feed_info.infos(conn, [key]) == {}
    finally:
        await fetcher.close()
        await db.close()
