"""The reads of the web UI: one user's subscriptions searched, sorted and paged, the
podcasts of the history filter, the overview's counts. Light rows for pages a
person reads, not the entities the sync rules work on. (The history itself:
`store.listening`.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.sorting import SQL_FUNCTION
from podsync.store import Connection


@dataclass(frozen=True, slots=True)
class SubscriptionRow:
    sync_id: str
    feed_url: str
    title: str | None  # from an OPML import
    subscribed_at: int
    unsubscribed_at: int | None


def like_pattern(text: str) -> str:
    """A LIKE pattern matching `text` anywhere, lower-cased, with % _ \\ escaped."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _subscription_filter(
    user_id: int, search: str | None, include_unsubscribed: bool
) -> tuple[str, list[Any]]:
    where = "s.user_id = ?"
    params: list[Any] = [user_id]
    if not include_unsubscribed:
        where += " AND s.unsubscribed_at IS NULL"
    if search:
        # The title the user's OPML import kept, or the one the feed fetcher learned.
        pattern = like_pattern(search)
        where += (
            " AND (lower(s.feed_url) LIKE ? ESCAPE '\\' "
            "OR lower(coalesce(s.title, '')) LIKE ? ESCAPE '\\' "
            "OR lower(coalesce(f.title, '')) LIKE ? ESCAPE '\\')"
        )
        params += [pattern, pattern, pattern]
    return where, params


_SEARCHED = "subscriptions s LEFT JOIN feed_info f ON f.url_key = s.url_key"

# The name a row shows: the user's own title (OPML import), the fetcher's, else the
# URL without its scheme (what the page shows then: host and path); sorted as people
# read (podsync/sorting.py: case, accents and a leading "The" or "A" do not count),
# by code point on both engines.
_SHOWN_NAME = (
    f"{SQL_FUNCTION}(coalesce(s.title, f.title, "
    "substr(s.feed_url, CASE WHEN lower(substr(s.feed_url, 1, 8)) = 'https://' "
    "THEN 9 ELSE 8 END)))"
)
_BINARY = {"sqlite": "", "postgresql": ' COLLATE "C"'}
# The moment of the user's latest action on the podcast (NULL: never played).
_LAST_PLAYED = (
    "(SELECT f.last_at FROM episode_feeds f WHERE f.user_id = s.user_id AND f.url_key = s.url_key)"
)
_ORDERS = {
    "title": "{name}, s.id",
    "added": "s.subscribed_at DESC, s.id DESC",
    "played": f"{_LAST_PLAYED} DESC NULLS LAST, {{name}}, s.id",
}
SUBSCRIPTION_ORDERS = tuple(_ORDERS)


async def subscriptions_page(
    conn: Connection,
    user_id: int,
    search: str | None,
    include_unsubscribed: bool,
    offset: int,
    limit: int,
    order: str = "title",
) -> tuple[list[SubscriptionRow], int]:
    """One page in `order` (a key of SUBSCRIPTION_ORDERS), and how many match in all."""
    where, params = _subscription_filter(user_id, search, include_unsubscribed)
    source = _SEARCHED if search else "subscriptions s"
    ordered = _ORDERS[order].format(name=_SHOWN_NAME + _BINARY[conn.dialect])
    total = await conn.fetch_one(f"SELECT count(*) FROM {source} WHERE {where}", params)
    rows = await conn.fetch_all(
        "SELECT s.sync_id, s.feed_url, s.title, s.subscribed_at, s.unsubscribed_at "
        f"FROM {_SEARCHED} WHERE {where} ORDER BY {ordered} LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return (
        [
            SubscriptionRow(
                str(r[0]),
                str(r[1]),
                None if r[2] is None else str(r[2]),
                int(r[3]),
                None if r[4] is None else int(r[4]),
            )
            for r in rows
        ],
        int(total[0]),
    )


async def subscription_counts(conn: Connection, user_id: int) -> tuple[int, int]:
    """(subscribed, unsubscribed) of the user."""
    row = await conn.fetch_one(
        "SELECT count(*) FILTER (WHERE unsubscribed_at IS NULL), "
        "count(*) FILTER (WHERE unsubscribed_at IS NOT NULL) "
        "FROM subscriptions WHERE user_id = ?",
        (user_id,),
    )
    return int(row[0] or 0), int(row[1] or 0)


async def history_podcasts(conn: Connection, user_id: int) -> list[tuple[str, str, str | None]]:
    """(podcast key, a feed URL, subscription title) of every podcast in the history:
    the subscription's URL, else the spelling its first action stored."""
    rows = await conn.fetch_all(
        "SELECT f.url_key, coalesce(s.feed_url, f.url), s.title FROM episode_feeds f "
        "LEFT JOIN subscriptions s ON s.user_id = f.user_id AND s.url_key = f.url_key "
        "WHERE f.user_id = ?",
        (user_id,),
    )
    return [(str(k), str(u), None if t is None else str(t)) for k, u, t in rows]
