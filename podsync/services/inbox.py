"""New episodes: an inbox of the episodes of a person's podcasts published since
they subscribed (the fetcher's items), newest first across all podcasts, less those
played or in progress and those dismissed. Kept by podsync alone: dismissing writes
nothing an app sees; "mark played" writes play actions as the episode page's
button does (services/web_listening.py), which the apps do see.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from podsync import timestamps
from podsync.errors import NotFound
from podsync.model import User
from podsync.services.episode_pages import EpisodePages, feed_ref
from podsync.services.web_listening import MAX_BULK
from podsync.storage.engine import Engine
from podsync.store import inbox, subscriptions
from podsync.store.inbox import Candidate, item_key

# The items read for the inbox and its count: the newest this many (a person who
# subscribed to a hundred daily shows a year ago has 36,500; nobody reads them here).
INBOX_READ = 1000
INBOX_PAGE = 50
# The people whose count of New episodes a process keeps (a few numbers each).
KEPT_COUNTS = 1024


@dataclass(frozen=True, slots=True)
class NewEpisode:
    ref: str  # the id of its page (a feed item's: nothing was done with it)
    item: Candidate


@dataclass(frozen=True, slots=True)
class Summary:
    newest: int | None  # the newest episode's publication time
    unplayed: int  # the feed's episodes never played


@dataclass(frozen=True, slots=True)
class InboxPage:
    episodes: list[NewEpisode]
    total: int  # all new episodes (up to INBOX_READ)
    capped: bool  # there may be more than INBOX_READ
    page: int
    pages: int


class Inbox:
    def __init__(self, db: Engine, pages: EpisodePages) -> None:
        self.db = db
        self.pages = pages
        # user id -> (what the count depended on, the count), least recently used first
        self._counts: OrderedDict[int, tuple[tuple[int, ...], int]] = OrderedDict()

    async def new_episodes(self, user: User, podcast_key: str | None = None) -> list[NewEpisode]:
        async with self.db.read(threaded=True) as conn:
            found = await inbox.candidates(conn, user.id, INBOX_READ, podcast_key)
            played = await inbox.played_items(conn, user.id, sorted({c.podcast_key for c in found}))
        return [
            NewEpisode(feed_ref(c.subscription_id, c.guid or None, c.episode_url), c)
            for c in found
            if (c.podcast_key, f"g{c.guid}") not in played
            and (c.podcast_key, f"u{c.episode_url}") not in played
        ]

    async def page(self, user: User, page: int) -> InboxPage:
        every = await self.new_episodes(user)
        pages = max(1, -(-len(every) // INBOX_PAGE))
        page = min(max(page, 1), pages)
        shown = every[(page - 1) * INBOX_PAGE : page * INBOX_PAGE]
        return InboxPage(shown, len(every), len(every) >= INBOX_READ, page, pages)

    async def count(self, user: User) -> int:
        """The navigation's count, on every signed-in page: kept while nothing it
        depends on has changed (`inbox.count_stamp`, a few index seeks), else counted
        again (the newest INBOX_READ items, less the played: milliseconds to tens).
        The stamp is read before the count, so a change between the two makes the
        next stamp differ and the count is read again; a count is never kept under a
        stamp newer than what it saw. Each process keeps its own, from the database,
        so several workers agree."""
        async with self.db.read() as conn:
            stamp = await inbox.count_stamp(conn, user.id)
        kept = self._counts.get(user.id)
        if kept is not None and kept[0] == stamp:
            self._counts.move_to_end(user.id)
            return kept[1]
        count = len(await self.new_episodes(user))
        self._counts[user.id] = (stamp, count)
        self._counts.move_to_end(user.id)
        while len(self._counts) > KEPT_COUNTS:
            self._counts.popitem(last=False)
        return count

    async def summaries(self, user: User, url_keys: list[str]) -> dict[str, Summary]:
        """Per podcast of the person's: its newest episode's date and how many of
        the feed's episodes they never played (for the subscriptions list)."""
        async with self.db.read(threaded=True) as conn:
            feeds = await inbox.feed_summaries(conn, url_keys)
            played = await inbox.played_items(conn, user.id, sorted(feeds))
            found = {}
            for key, (newest, items) in feeds.items():
                mine = [k for podcast, k in played if podcast == key]
                listened = await inbox.listed_among(conn, key, mine) if mine else 0
                found[key] = Summary(newest, max(0, items - listened))
        return found

    async def older_items(self, user: User, sync_id: str, published_at: int) -> list[str]:
        """The ids of the pages of a podcast's feed items published at or before a
        time (the podcast page's "this and all older"), up to MAX_BULK."""
        async with self.db.read() as conn:
            entity = await subscriptions.get_by_sync_id(conn, user.id, sync_id)
            if entity is None or entity.id is None:
                raise NotFound("There is no such podcast (or it is not yours).")
            found = await inbox.items_up_to(conn, entity.url_key, published_at, MAX_BULK)
        refs = dict.fromkeys(feed_ref(entity.id, g or None, u) for u, g in found)
        return list(refs)

    async def dismiss(self, user: User, refs: list[str]) -> int:
        """Take episodes (by their pages' ids) out of the inbox; NotFound for one
        that is not the person's (nothing is dismissed then)."""
        keys = []
        for ref in refs:
            episode = await self.pages.episode(user, ref)
            keys.append((episode.podcast_key, item_key(episode.guid, episode.episode_url)))
        async with self.db.write() as conn:
            await inbox.dismiss(conn, user.id, keys, timestamps.now_us())
        return len(keys)
