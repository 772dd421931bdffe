"""What a podcast's page reads of its feed: the episodes as the fetcher stored them
(`feed_episodes`), newest first, a page at a time, and how many there are."""

from __future__ import annotations

from podsync.store import Connection
from podsync.store.feed_info import FeedItem, optional_int

# Newest first: by date, then by place in the feed; rows of neither (stored before
# dates were kept) last. The index feed_episodes_newest reads it in this order.
_NEWEST = "published_at DESC NULLS LAST, feed_rank DESC NULLS LAST, episode_url, guid"


async def newest_episodes(
    conn: Connection, url_key: str, offset: int, limit: int
) -> list[FeedItem]:
    """A page of the feed's episode rows, newest first."""
    rows = await conn.fetch_all(
        "SELECT episode_url, guid, title, published_at, duration FROM feed_episodes "
        f"WHERE url_key = ? ORDER BY {_NEWEST} LIMIT ? OFFSET ?",
        (url_key, limit, offset),
    )
    return [
        FeedItem(str(u), str(g), str(t), optional_int(p), optional_int(d)) for u, g, t, p, d in rows
    ]


async def episode_count(conn: Connection, url_key: str) -> int:
    row = await conn.fetch_one("SELECT count(*) FROM feed_episodes WHERE url_key = ?", (url_key,))
    return 0 if row is None else int(row[0])
