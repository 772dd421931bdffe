"""The reads of an episode's page: the user's episode by its id (theirs only), the
feed item the fetcher kept of it, and its actions newest first.

An episode's id is `episodes.id`, the row its first action made. It is looked up
with the user's podcast (`episode_feeds.user_id`): on SQLite a deleted user's ids
may be handed out again, so an id alone says nothing of whose it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.episode_keys import full_url, url_hash
from podsync.store import Connection
from podsync.store.feed_info import FeedItem
from podsync.store.listening import HISTORY_COLUMNS, HISTORY_JOINED, HistoryRow, history_row


@dataclass(frozen=True, slots=True)
class KnownEpisode:
    """One of the user's episodes (an `episodes` row: something was done with it)."""

    id: int
    podcast_key: str  # the podcast's url key
    podcast_url: str  # its spelling in the first action
    episode_url: str
    guid: str | None


_KNOWN = "e.id, f.url_key, f.url, e.url, e.prefixed, f.prefix, e.guid"


def _known(row: Any) -> KnownEpisode:
    episode_id, key, podcast, url, prefixed, prefix, guid = row
    return KnownEpisode(
        int(episode_id), str(key), str(podcast), full_url(str(url), prefixed, str(prefix)), guid
    )


async def known_episode(conn: Connection, user_id: int, episode_id: int) -> KnownEpisode | None:
    row = await conn.fetch_one(
        f"SELECT {_KNOWN} FROM episodes e JOIN episode_feeds f ON f.id = e.feed_id "
        "WHERE e.id = ? AND f.user_id = ?",
        (episode_id, user_id),
    )
    return None if row is None else _known(row)


async def known_for_item(
    conn: Connection, user_id: int, podcast_key: str, episode_urls: list[str], guid: str
) -> KnownEpisode | None:
    """The user's episode of a feed item, if they did anything with it: by one of its
    enclosure URLs (the hash's index, checked against the URL), else by its guid (as
    episode titles are matched)."""
    feed = await conn.fetch_one(
        "SELECT id, url, prefix FROM episode_feeds WHERE user_id = ? AND url_key = ?",
        (user_id, podcast_key),
    )
    if feed is None:
        return None
    head = f"SELECT {_KNOWN} FROM episodes e JOIN episode_feeds f ON f.id = e.feed_id "
    for url in episode_urls:
        if not url:
            continue
        rows = await conn.fetch_all(
            head + "WHERE e.feed_id = ? AND e.url_hash = ?", (feed[0], url_hash(url))
        )
        for row in rows:
            known = _known(row)
            if known.episode_url == url:
                return known
    if guid:
        row = await conn.fetch_one(
            head + "WHERE e.feed_id = ? AND e.guid = ? ORDER BY e.id LIMIT 1", (feed[0], guid)
        )
        if row is not None:
            return _known(row)
    return None


_ITEM = "episode_url, guid, title, published_at, duration, link, media_type, notes, chapters"


def _item(row: Any) -> FeedItem:
    url, guid, title, published, duration, link, kind, notes, chapters = row
    return FeedItem(
        str(url),
        str(guid),
        str(title),
        None if published is None else int(published),
        None if duration is None else int(duration),
        link,
        kind,
        notes,
        chapters,
    )


async def feed_item(
    conn: Connection, podcast_key: str, episode_url: str, guid: str | None
) -> FeedItem | None:
    """The fetcher's row of an item of the feed: by its guid when the feed lists it,
    else by the enclosure URL (the topmost row when an item has several)."""
    order = " ORDER BY feed_rank DESC, episode_url LIMIT 1"
    if guid:
        row = await conn.fetch_one(
            f"SELECT {_ITEM} FROM feed_episodes WHERE url_key = ? AND guid = ?{order}",
            (podcast_key, guid),
        )
        if row is not None:
            return _item(row)
    if not episode_url:
        return None
    row = await conn.fetch_one(
        f"SELECT {_ITEM} FROM feed_episodes WHERE url_key = ? AND episode_url = ?{order}",
        (podcast_key, episode_url),
    )
    return None if row is None else _item(row)


async def enclosures(conn: Connection, podcast_key: str, guid: str) -> list[str]:
    """Every enclosure URL the feed lists for the item of this guid."""
    rows = await conn.fetch_all(
        "SELECT episode_url FROM feed_episodes WHERE url_key = ? AND guid = ? "
        "AND episode_url <> '' ORDER BY feed_rank DESC",
        (podcast_key, guid),
    )
    return [str(r[0]) for r in rows]


async def episode_actions(
    conn: Connection, user_id: int, episode_id: int, limit: int
) -> list[HistoryRow]:
    """The user's latest `limit` actions on one episode, newest first by their own
    time (the index on episode and time). The user is checked on the episode's
    podcast, and on the actions as an expression no index serves: as a column,
    PostgreSQL on a new instance's statistics took it through the user's every
    action."""
    pinned = " INDEXED BY episode_actions_episode" if conn.dialect == "sqlite" else ""
    rows = await conn.fetch_all(
        f"SELECT {HISTORY_COLUMNS} FROM episode_actions a{pinned} "
        f"JOIN episodes e ON e.id = a.episode_id {HISTORY_JOINED}"
        "WHERE a.episode_id = ? AND f.user_id = ? AND a.user_id + 0 = f.user_id "
        "ORDER BY a.occurred_at DESC, a.seq DESC LIMIT ?",
        (episode_id, user_id, limit),
    )
    return [history_row(r) for r in rows]
