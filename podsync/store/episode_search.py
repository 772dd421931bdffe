"""Finding a person's episodes by words of their titles and show notes
(`podsync/words.py`): the feed items of the podcasts they have a subscription to
(subscribed or not), newest first, a page at a time.

The cost follows the person's own podcasts, never the server's: the person's
subscriptions are read first (their index on the user), then each of their feeds'
items by the url key's index, and each item's words are compared there (every word
typed must start a word of the title or of the notes). A full-text index over every
feed (schema step 22's) did the opposite: a prefix as short as "c" matched half of
everyone's items before the person's were picked out. SQLite is told the order of
the join (CROSS JOIN); PostgreSQL looks each of the person's feeds' items up on its
own (`subscriptions.with_feed_items`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.store import Connection
from podsync.store.subscriptions import with_feed_items
from podsync.store.value_lists import each_row

_COLUMNS = "fe.url_key, fe.episode_url, fe.guid, fe.title, fe.published_at, fe.duration"
_ORDER = (
    "fe.published_at DESC NULLS LAST, fe.feed_rank DESC NULLS LAST, fe.url_key, "
    "fe.episode_url, fe.guid"
)
# Each word a LIKE pattern against " title words notes words": the words are
# letters and digits only (no LIKE wildcard), so "% word%" is "starts a word".
_WORDS = "(' ' || fe.words || ' ' || fe.note_words) LIKE ?"


@dataclass(frozen=True, slots=True)
class FoundItem:
    podcast_key: str
    episode_url: str
    guid: str
    title: str
    published_at: int | None
    duration: int | None


def _found(row: Any) -> FoundItem:
    key, url, guid, title, published, duration = row
    return FoundItem(
        str(key),
        str(url),
        str(guid),
        str(title),
        None if published is None else int(published),
        None if duration is None else int(duration),
    )


def statement(
    dialect: str, user_id: int, words: list[str], podcast_key: str | None
) -> tuple[str, list[Any]]:
    """The search's SELECT and its parameters but LIMIT and OFFSET (tests read its
    plan)."""
    assert words and all(w.isalnum() for w in words)
    only = " AND s.url_key = ?" if podcast_key is not None else ""
    matching = " AND ".join([_WORDS] * len(words))
    source = with_feed_items(dialect, f"{_COLUMNS}, fe.feed_rank", matching)
    sql = f"SELECT {_COLUMNS} FROM {source} WHERE s.user_id = ?{only} ORDER BY {_ORDER}"
    params: list[Any] = [f"% {w}%" for w in words] + [user_id]
    if podcast_key is not None:
        params.append(podcast_key)
    return sql, params


async def find(
    conn: Connection,
    user_id: int,
    words: list[str],
    limit: int,
    offset: int,
    podcast_key: str | None = None,
) -> list[FoundItem]:
    """Up to `limit` items whose title or notes have every one of `words` (each the
    start of a word), after `offset`, newest first; of one podcast only when
    `podcast_key` is given. `words` come from `podsync.words.query_words`: runs of
    letters and digits, at least one."""
    sql, params = statement(conn.dialect, user_id, words, podcast_key)
    rows = await conn.fetch_all(sql + " LIMIT ? OFFSET ?", (*params, limit, offset))
    return [_found(r) for r in rows]


@dataclass(frozen=True, slots=True)
class PodcastTitle:
    sync_id: str
    url_key: str
    feed_url: str
    title: str | None  # the subscription's own (OPML), else None
    feed_title: str | None  # the fetcher's
    description: str | None
    subscribed: bool


async def podcasts(conn: Connection, user_id: int) -> list[PodcastTitle]:
    """The person's podcasts with the titles a search matches (theirs only: a few
    hundred at most, read by the index on the user)."""
    feeds = "LEFT JOIN feed_info fi ON fi.url_key = s.url_key"
    if conn.dialect == "postgresql":
        # Each podcast's feed on its own: on a new instance's statistics PostgreSQL
        # took a person for a two-hundredth of the table and joined their podcasts
        # with every feed of the server (40,000 read for 50).
        feed = "SELECT title, description FROM feed_info fi WHERE fi.url_key = s.url_key"
        feeds = each_row(feed, "fi", left=True)
    rows = await conn.fetch_all(
        "SELECT s.sync_id, s.url_key, s.feed_url, s.title, fi.title, fi.description, "
        f"s.unsubscribed_at FROM subscriptions s {feeds} "
        "WHERE s.user_id = ? ORDER BY s.id",
        (user_id,),
    )
    return [
        PodcastTitle(str(a), str(k), str(u), t, ft, d, gone is None)
        for a, k, u, t, ft, d, gone in rows
    ]
