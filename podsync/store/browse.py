"""The reads of the web UI: one user's subscriptions searched and paged, the
episode-action history newest first, the overview's counts. Light rows for pages
a person reads, not the entities the sync rules work on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.store import Connection


@dataclass(frozen=True, slots=True)
class SubscriptionRow:
    sync_id: str
    feed_url: str
    title: str | None  # from an OPML import
    subscribed_at: int
    unsubscribed_at: int | None


@dataclass(frozen=True, slots=True)
class HistoryRow:
    seq: int
    podcast_url: str
    podcast_title: str | None  # the subscription's title, when the user has one
    episode_url: str
    guid: str | None
    action: str
    occurred_at: int
    device_id: str | None
    position: int | None
    total: int | None


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


async def subscriptions_page(
    conn: Connection,
    user_id: int,
    search: str | None,
    include_unsubscribed: bool,
    offset: int,
    limit: int,
) -> tuple[list[SubscriptionRow], int]:
    """One page, newest first, and how many match in all."""
    where, params = _subscription_filter(user_id, search, include_unsubscribed)
    source = _SEARCHED if search else "subscriptions s"
    rows = await conn.fetch_all(
        "SELECT s.sync_id, s.feed_url, s.title, s.subscribed_at, s.unsubscribed_at "
        f"FROM {source} WHERE {where} ORDER BY s.id DESC LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    total = await conn.fetch_one(f"SELECT count(*) FROM {source} WHERE {where}", params)
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


_HISTORY = (
    "SELECT e.seq, e.podcast_url, s.title, e.episode_url, e.guid, e.action, e.occurred_at, "
    "e.device_id, e.position, e.total FROM episode_actions e "
    "LEFT JOIN subscriptions s ON s.user_id = e.user_id AND s.url_key = e.podcast_key "
)


async def history_page(
    conn: Connection,
    user_id: int,
    podcast_key: str | None,
    device_id: str | None,
    before: int | None,
    after: int | None,
    limit: int,
) -> list[HistoryRow]:
    """Up to `limit` episode actions newest first (by arrival), older than `before`
    or, for the page before, newer than `after`."""
    where = "e.user_id = ?"
    params: list[Any] = [user_id]
    if podcast_key is not None:
        where += " AND e.podcast_key = ?"
        params.append(podcast_key)
    if device_id is not None:
        where += " AND e.device_id = ?"
        params.append(device_id)
    if after is not None:
        where += " AND e.seq > ?"
        params.append(after)
        order = "ASC"
    else:
        if before is not None:
            where += " AND e.seq < ?"
            params.append(before)
        order = "DESC"
    rows = await conn.fetch_all(
        f"{_HISTORY} WHERE {where} ORDER BY e.seq {order} LIMIT ?", [*params, limit]
    )
    found = [
        HistoryRow(
            int(r[0]),
            str(r[1]),
            None if r[2] is None else str(r[2]),
            str(r[3]),
            None if r[4] is None else str(r[4]),
            str(r[5]),
            int(r[6]),
            None if r[7] is None else str(r[7]),
            None if r[8] is None else int(r[8]),
            None if r[9] is None else int(r[9]),
        )
        for r in rows
    ]
    return found if order == "DESC" else found[::-1]


async def history_exists(
    conn: Connection,
    user_id: int,
    podcast_key: str | None,
    device_id: str | None,
    seq: int,
    newer: bool,
) -> bool:
    """Whether an action past `seq` (newer or older) matches the filter."""
    where = "user_id = ? AND seq > ?" if newer else "user_id = ? AND seq < ?"
    params: list[Any] = [user_id, seq]
    if podcast_key is not None:
        where += " AND podcast_key = ?"
        params.append(podcast_key)
    if device_id is not None:
        where += " AND device_id = ?"
        params.append(device_id)
    row = await conn.fetch_one(f"SELECT 1 FROM episode_actions WHERE {where} LIMIT 1", params)
    return row is not None


async def history_podcasts(conn: Connection, user_id: int) -> list[tuple[str, str, str | None]]:
    """(podcast key, a feed URL, subscription title) of every podcast in the history.
    The keys come from the index alone; a URL is looked up only for a podcast the
    user has no subscription to."""
    rows = await conn.fetch_all(
        "SELECT h.podcast_key, coalesce(s.feed_url, ("
        "    SELECT e.podcast_url FROM episode_actions e"
        "    WHERE e.user_id = ? AND e.podcast_key = h.podcast_key LIMIT 1)), s.title "
        "FROM (SELECT DISTINCT podcast_key FROM episode_actions WHERE user_id = ?) h "
        "LEFT JOIN subscriptions s ON s.user_id = ? AND s.url_key = h.podcast_key",
        (user_id, user_id, user_id),
    )
    return [(str(k), str(u), None if t is None else str(t)) for k, u, t in rows]
