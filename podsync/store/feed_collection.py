"""What no subscription refers to any more: the feeds everyone unsubscribed from (or
whose subscribers were deleted), with their episodes, and the images no feed names
then. Collected by the leader's pruner (`services/feed_info.py`), a few feeds per
write, so that no write holds the lock for long.
"""

from __future__ import annotations

from collections.abc import Sequence

from podsync.store import Connection
from podsync.store.value_lists import in_list


async def unreferenced(conn: Connection, before: int, limit: int) -> list[str]:
    """Up to `limit` feeds that nobody has subscribed to since `before` and that were
    not fetched or checked since then (a Subscribe's check stores its feed, as checked,
    a moment before the subscription). Call in a write: on PostgreSQL the rows are
    locked until it ends, so a check that stores one of them waits for the delete and
    writes it anew, and one that came first has them skipped."""
    lock = " FOR UPDATE OF f" if conn.dialect == "postgresql" else ""
    rows = await conn.fetch_all(
        "SELECT url_key FROM feed_info f WHERE (f.checked_at IS NULL OR f.checked_at < ?) "
        "AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.url_key = f.url_key "
        f"AND (s.unsubscribed_at IS NULL OR s.unsubscribed_at >= ?)) LIMIT ?{lock}",
        (before, before, limit),
    )
    return [str(r[0]) for r in rows]


async def forget_feeds(conn: Connection, url_keys: Sequence[str]) -> None:
    """Delete these feeds and their episodes (their images stay until `artwork`
    collects what no feed names). Call in a write."""
    marks, bound = in_list(url_keys, dialect=conn.dialect)
    await conn.execute(f"DELETE FROM feed_episodes WHERE url_key IN ({marks})", bound)
    await conn.execute(f"DELETE FROM feed_info WHERE url_key IN ({marks})", bound)
