"""Reading episode actions for the pulls of the gpodder and Nextcloud APIs, a piece at
a time in the user's seq order (each piece its own short read: a long history is
never in memory at once, and a slow client holds no read transaction open).

A piece's rows are `ActionRow`s; `episode_keys` says how their columns are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from podsync.store import Connection
from podsync.store.episode_history import later_of_same

# The columns of an ActionRow, from `episode_actions a JOIN episodes e`.
_ROW = (
    "a.seq, e.feed_id, e.url, e.prefixed, e.guid, a.action, a.occurred_at, a.device_id, "
    "a.started, a.position, a.total, a.guid, a.podcast_url"
)


class ActionRow(NamedTuple):
    seq: int
    feed_id: int
    episode_url: str  # as stored: without the feed's prefix when `prefixed`
    prefixed: int
    episode_guid: str | None
    action: int  # episode_keys.ACTION_NAMES
    occurred_at: int
    device_id: str | None
    started: int | None
    position: int | None
    total: int | None
    guid: str | None  # None: the episode's; "": none
    podcast_url: str | None  # None: the feed's spelling


class Feed(NamedTuple):
    url: str  # the spelling the feed was stored with
    prefix: str


async def feeds(
    conn: Connection, user_id: int, ids: Iterable[int] | None = None
) -> dict[int, Feed]:
    """The user's podcasts by id (all of them, or these)."""
    wanted = None if ids is None else sorted(set(ids))
    if wanted == []:
        return {}
    where = "" if wanted is None else f" AND id IN ({','.join('?' * len(wanted))})"
    rows = await conn.fetch_all(
        f"SELECT id, url, prefix FROM episode_feeds WHERE user_id = ?{where}",
        (user_id, *(wanted or ())),
    )
    return {int(i): Feed(str(u), str(p)) for i, u, p in rows}


async def feed_id(conn: Connection, user_id: int, url_key: str) -> int | None:
    row = await conn.fetch_one(
        "SELECT id FROM episode_feeds WHERE user_id = ? AND url_key = ?", (user_id, url_key)
    )
    return None if row is None else int(row[0])


def _rows(rows: list[Any]) -> list[ActionRow]:
    """The rows as the driver gives them (tuples; asyncpg's records): ActionRow's
    fields in its order, indexed and unpacked alike, without a copy each."""
    return rows


async def page(
    conn: Connection,
    user_id: int,
    *,
    window_after: int,
    after_seq: int,
    upto_seq: int,
    feed: int | None,
    device_id: str | None,
    aggregated: bool,
    limit: int,
) -> list[ActionRow]:
    """Up to `limit` actions with seq in (after_seq, upto_seq], in seq order;
    optionally only one podcast's or one device's. `aggregated` keeps the latest per
    episode and kind, by (client time, seq), among the actions (of that podcast or
    device) with seq in (window_after, upto_seq]: a page read in pieces passes its
    own start as `window_after` to every piece."""
    where = "a.user_id = ? AND a.seq > ? AND a.seq <= ?"
    params: list[Any] = [user_id, after_seq, upto_seq]
    if device_id is not None:
        where += " AND a.device_id = ?"
        params.append(device_id)
    if aggregated:
        # A later action of the same episode and kind in the range: not the latest.
        scope = " AND b.seq > ? AND b.seq <= ?"
        if device_id is not None:
            scope += " AND b.device_id = ?"
        where += f" AND NOT ({later_of_same(conn, scope)})"
        params += [window_after, upto_seq] + ([device_id] if device_id is not None else [])
    if feed is None:
        source = "episode_actions a JOIN episodes e ON e.id = a.episode_id"
    else:
        # From the podcast's episodes (few), not through every action of the user.
        by_episode = " INDEXED BY episode_actions_episode" if conn.dialect == "sqlite" else ""
        source = f"episodes e CROSS JOIN episode_actions a{by_episode}"
        where = f"e.feed_id = ? AND a.episode_id = e.id AND {where}"
        params.insert(0, feed)
    rows = await conn.fetch_all(
        f"SELECT {_ROW} FROM {source} WHERE {where} ORDER BY a.seq LIMIT ?", [*params, limit]
    )
    return _rows(rows)


async def received_bounds(
    conn: Connection, user_id: int, from_s: int, since_s: int
) -> tuple[int | None, int | None]:
    """(the first seq received at or after `from_s`, the first received at or after
    `since_s`), None when there is none: every action received from then on has a seq
    at least that (the receipts name each second's first action)."""
    first = "SELECT min(first_seq) FROM episode_receipts WHERE user_id = ? AND received_s >= ?"
    row = await conn.fetch_one(f"SELECT ({first}), ({first})", (user_id, from_s, user_id, since_s))
    return (
        None if row[0] is None else int(row[0]),
        None if row[1] is None else int(row[1]),
    )


async def received_page(
    conn: Connection,
    user_id: int,
    after_seq: int,
    limit: int,
    before_since: tuple[int | None, str | None] | None = None,
) -> list[ActionRow]:
    """Up to `limit` actions after `after_seq` in seq order. With `before_since` =
    (since_seq, device), those before `since_seq` (None: all) only when their device
    is not that one (None: only those with a device, as the release before did)."""
    where = "a.user_id = ? AND a.seq > ?"
    params: list[Any] = [user_id, after_seq]
    if before_since is not None:
        since_seq, device_id = before_since
        distinct = "IS NOT" if conn.dialect == "sqlite" else "IS DISTINCT FROM"
        where += f" AND (a.seq >= ? OR a.device_id {distinct} ?)"
        params += [2**62 if since_seq is None else since_seq, device_id]
    rows = await conn.fetch_all(
        f"SELECT {_ROW} FROM episode_actions a JOIN episodes e ON e.id = a.episode_id "
        f"WHERE {where} ORDER BY a.seq LIMIT ?",
        [*params, limit],
    )
    return _rows(rows)
