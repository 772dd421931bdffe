"""The reads of the gpodder subscription stream (gpodder spec 5.5, 6.5): the user's
entities as (feed_url, subscribed) pairs, and the URLs that OPA updates moved them
away from. Light rows, not Subscription objects: a first sync of 1,000 feeds reads
every one of them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from podsync.store import Connection
from podsync.store.value_lists import in_list


class HeldFeed(NamedTuple):
    """One of the user's entities as a list replace compares it: light, no view."""

    id: int
    feed_url: str
    url_key: str
    guid: str
    subscribed: bool


async def held_after(conn: Connection, user_id: int, after_id: int, limit: int) -> list[HeldFeed]:
    """Up to `limit` of the user's entities (subscribed or not) after id `after_id`,
    in creation order: a page of what a list replace reads."""
    rows = await conn.fetch_all(
        "SELECT id, feed_url, url_key, guid, unsubscribed_at IS NULL FROM subscriptions "
        "WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?",
        (user_id, after_id, limit),
    )
    return [HeldFeed(int(i), str(u), str(k), str(g), bool(s)) for i, u, k, g, s in rows]


def _active(conn: Connection) -> str:
    """The table, on SQLite pinned to the index that holds unsubscribed_at (the
    filter is read from it, not from the table)."""
    if conn.dialect == "sqlite":
        return "subscriptions INDEXED BY subscriptions_user"
    return "subscriptions"


async def subscribed_urls(conn: Connection, user_id: int) -> list[str]:
    rows = await conn.fetch_all(
        f"SELECT feed_url FROM {_active(conn)} "
        "WHERE user_id = ? AND unsubscribed_at IS NULL ORDER BY id",
        (user_id,),
    )
    return [str(r[0]) for r in rows]


async def subscribed_titles(conn: Connection, user_id: int) -> list[tuple[str, str | None]]:
    """(feed_url, title): the title an OPML import kept, else the one the feed fetcher
    learned, else None."""
    pinned = " INDEXED BY subscriptions_user" if conn.dialect == "sqlite" else ""
    rows = await conn.fetch_all(
        f"SELECT s.feed_url, coalesce(s.title, f.title) FROM subscriptions AS s{pinned} "
        "LEFT JOIN feed_info AS f ON f.url_key = s.url_key "
        "WHERE s.user_id = ? AND s.unsubscribed_at IS NULL "
        "ORDER BY s.id",
        (user_id,),
    )
    # asyncpg's records become tuples (sqlite3's rows are tuples already, and tuple()
    # returns them as they are), at C speed: a Python loop over 20,000 rows, on the
    # event loop, held it for milliseconds.
    return list(map(tuple, rows))


async def changed_between(
    conn: Connection, user_id: int, after_seq: int, upto_seq: int
) -> list[tuple[str, bool]]:
    """(feed_url, subscribed) of the entities whose change_seq is in (after, upto]."""
    rows = await conn.fetch_all(
        "SELECT feed_url, unsubscribed_at IS NULL FROM subscriptions "
        "WHERE user_id = ? AND change_seq > ? AND change_seq <= ? ORDER BY change_seq",
        (user_id, after_seq, upto_seq),
    )
    return [(str(u), bool(s)) for u, s in rows]


async def moved_between(conn: Connection, user_id: int, after_seq: int, upto_seq: int) -> list[str]:
    """The old URLs of entities whose feed_url an update changed in (after, upto]."""
    rows = await conn.fetch_all(
        "SELECT old_url FROM subscription_url_aliases "
        "WHERE user_id = ? AND changed_seq > ? AND changed_seq <= ? ORDER BY changed_seq",
        (user_id, after_seq, upto_seq),
    )
    return [str(r[0]) for r in rows]


async def alias_targets(conn: Connection, user_id: int, urls: Iterable[str]) -> dict[str, str]:
    """old URL -> the sync_id of the entity that had it, for the given old URLs."""
    unique = sorted(set(urls))
    if not unique:
        return {}
    found: dict[str, str] = {}
    for start in range(0, len(unique), 500):
        marks, bound = in_list(unique[start : start + 500], 500, dialect=conn.dialect)
        rows = await conn.fetch_all(
            "SELECT a.old_url, s.sync_id FROM subscription_url_aliases a "
            "JOIN subscriptions s ON s.id = a.subscription_id "
            f"WHERE a.user_id = ? AND a.old_url IN ({marks}) "
            "ORDER BY a.changed_seq",
            (user_id, *bound),
        )
        found.update((str(u), str(s)) for u, s in rows)
    return found
