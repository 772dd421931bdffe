"""What the pages, the OPML export and the gpodder lists read of the feed fetcher's
findings: titles, websites and artwork of feeds, titles of episodes, and each feed's
fetch state (last error, next try).

Everything here is a read of what the fetcher stored (`podsync.store.feed_info`);
nothing here makes a connection. With `[feeds] fetch_metadata = false` nothing is
ever fetched, so every lookup finds nothing, and callers fall back to what they had
(the title an OPML import kept, or the URL).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from podsync import timestamps
from podsync.feeds import url_key
from podsync.storage.engine import Engine
from podsync.store import artwork, feed_collection
from podsync.store import feed_info as store
from podsync.store.feed_info import FeedInfo

__all__ = ["EpisodeRef", "FeedInfo", "FeedInfoService", "FetchSummary"]

# A feed nobody subscribes to is collected once this long has passed since its last
# subscriber left and its last fetch: the pruner runs hourly, so it goes within two.
COLLECT_AFTER_US = 3_600_000_000
FEEDS_PER_WRITE = 10  # a feed may hold thousands of episodes
IMAGES_PER_WRITE = 50


class EpisodeRef(NamedTuple):
    """One episode as an app named it in an episode action."""

    feed_url: str  # the podcast URL of the action (any spelling of the feed)
    episode_url: str  # the media URL of the action
    guid: str | None = None


@dataclass(frozen=True, slots=True)
class FetchSummary:
    enabled: bool  # [feeds] fetch_metadata
    feeds: int  # feeds known to the fetcher
    fetched: int  # feeds fetched at least once
    failing: int  # feeds whose last fetch failed


class FeedInfoService:
    def __init__(self, db: Engine, enabled: bool) -> None:
        self.db = db
        # Whether the fetcher runs ([feeds] fetch_metadata): a page can say why it
        # shows no titles.
        self.enabled = enabled

    async def for_feeds(self, feed_urls: Iterable[str]) -> dict[str, FeedInfo]:
        """What is known of each of `feed_urls`, keyed by the URL as given (a feed
        the fetcher has not come across yet is absent; one not fetched yet has no
        title and no `fetched_at`). Two spellings of one feed (same url
        key) get the same FeedInfo."""
        keys = {url: url_key(url) for url in feed_urls}
        if not keys:
            return {}
        async with self.db.read() as conn:
            known = await store.infos(conn, keys.values())
        return {url: known[key] for url, key in keys.items() if key in known}

    async def description(self, feed_url: str) -> str | None:
        """What the feed says of itself, as last fetched (plain text)."""
        async with self.db.read() as conn:
            return await store.description(conn, url_key(feed_url))

    async def titles(self, feed_urls: Iterable[str]) -> dict[str, str]:
        """The learned title of each of `feed_urls` that has one, keyed by the URL
        as given (OPML export, gpodder lists)."""
        infos = await self.for_feeds(feed_urls)
        return {url: info.title for url, info in infos.items() if info.title}

    async def episode_titles(self, episodes: Iterable[EpisodeRef]) -> dict[EpisodeRef, str]:
        """The title of each episode the fetcher saw in its feed: matched by guid
        first, else by the enclosure URL, within the same feed (url key)."""
        refs = list(dict.fromkeys(episodes))
        if not refs:
            return {}
        keys = {ref.feed_url: url_key(ref.feed_url) for ref in refs}
        async with self.db.read() as conn:
            rows = await store.episode_titles(
                conn,
                ((keys[ref.feed_url], ref.episode_url) for ref in refs),
                ((keys[ref.feed_url], ref.guid) for ref in refs if ref.guid),
            )
        by_guid = {(r.url_key, r.guid): r.title for r in rows if r.guid}
        by_url = {(r.url_key, r.episode_url): r.title for r in rows if r.episode_url}
        found: dict[EpisodeRef, str] = {}
        for ref in refs:
            key = keys[ref.feed_url]
            title = by_guid.get((key, ref.guid)) if ref.guid else None
            if title is None:
                title = by_url.get((key, ref.episode_url))
            if title is not None:
                found[ref] = title
        return found

    async def artwork(self, user_id: int, digest: str) -> tuple[str, bytes] | None:
        """(type, bytes) of an image the fetcher keeps, by its hash (hex), when one of
        the user's podcasts has it; else None, as for an image not kept (a hash says
        nothing of what others subscribe to). Read on a worker thread: an image may
        be a megabyte."""
        async with self.db.read(threaded=True) as conn:
            return await artwork.image_for(conn, user_id, digest)

    async def failing(self, limit: int = 100) -> list[FeedInfo]:
        """Feeds whose last fetch failed (with the error and the next try), the
        longest-failing first. Every user's feeds: for an admin's eyes only, and even
        there a feed URL can hold a private feed's token (show the host, say)."""
        async with self.db.read() as conn:
            return await store.failing(conn, limit)

    async def summary(self) -> FetchSummary:
        async with self.db.read() as conn:
            feeds, fetched, failing = await store.counts(conn)
        return FetchSummary(self.enabled, feeds, fetched, failing)


async def collect_unreferenced(db: Engine, now: int | None = None) -> tuple[int, int]:
    """Delete the feeds no subscription refers to any more (COLLECT_AFTER_US after
    the last one left), their episodes, and the images no feed names then; (feeds,
    images) deleted. Run by the leader's pruner."""
    before = (timestamps.now_us() if now is None else now) - COLLECT_AFTER_US
    feeds = images = 0
    while True:
        async with db.write() as conn:
            keys = await feed_collection.unreferenced(conn, before, FEEDS_PER_WRITE)
            if keys:
                await feed_collection.forget_feeds(conn, keys)
        feeds += len(keys)
        if len(keys) < FEEDS_PER_WRITE:
            break
    while True:
        async with db.write() as conn:
            digests = await artwork.unnamed(conn, IMAGES_PER_WRITE)
            for digest in digests:
                await artwork.collect(conn, digest)
        images += len(digests)
        if len(digests) < IMAGES_PER_WRITE:
            return feeds, images
