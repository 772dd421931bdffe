"""The web UI's reads of what a person listened to: the history newest first by the
action's own time (when it happened on the device, ties by arrival), paged by a
(time, seq) key; the latest plays for "Continue listening"; one podcast's actions.

The time is the client's `occurred_at`, not the arrival: a device that uploads a
backlog (a first sync, a tablet back online) must not put old plays on top. The
index `episode_actions_time (user_id, occurred_at, seq)` answers every page from
its key, however deep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.store import Connection

# A position in the history: (occurred_at, seq) of an action.
HistoryKey = tuple[int, int]


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

    @property
    def key(self) -> HistoryKey:
        return (self.occurred_at, self.seq)


@dataclass(frozen=True, slots=True)
class HistoryFilter:
    podcast_key: str | None = None
    device_id: str | None = None
    action: str | None = None


_COLUMNS = (
    "e.seq, e.podcast_url, s.title, e.episode_url, e.guid, e.action, e.occurred_at, "
    "e.device_id, e.position, e.total"
)
_FROM = (
    "FROM episode_actions e "
    "LEFT JOIN subscriptions s ON s.user_id = e.user_id AND s.url_key = e.podcast_key "
)


def _row(r: Any) -> HistoryRow:
    return HistoryRow(
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


def _where(user_id: int, only: HistoryFilter) -> tuple[str, list[Any]]:
    where = "e.user_id = ?"
    params: list[Any] = [user_id]
    for column, value in (
        ("podcast_key", only.podcast_key),
        ("device_id", only.device_id),
        ("action", only.action),
    ):
        if value is not None:
            where += f" AND e.{column} = ?"
            params.append(value)
    return where, params


async def history_page(
    conn: Connection,
    user_id: int,
    only: HistoryFilter,
    before: HistoryKey | None,
    after: HistoryKey | None,
    limit: int,
) -> list[HistoryRow]:
    """Up to `limit` actions newest first by their own time, older than `before` or,
    for the page before, newer than `after` (then read oldest first and reversed)."""
    where, params = _where(user_id, only)
    if after is not None:
        where += " AND (e.occurred_at, e.seq) > (?, ?)"
        params += list(after)
        order = "ASC"
    else:
        if before is not None:
            where += " AND (e.occurred_at, e.seq) < (?, ?)"
            params += list(before)
        order = "DESC"
    rows = await conn.fetch_all(
        f"SELECT {_COLUMNS} {_FROM} WHERE {where} "
        f"ORDER BY e.occurred_at {order}, e.seq {order} LIMIT ?",
        [*params, limit],
    )
    found = [_row(r) for r in rows]
    return found if order == "DESC" else found[::-1]


async def history_exists(
    conn: Connection, user_id: int, only: HistoryFilter, key: HistoryKey, newer: bool
) -> bool:
    """Whether an action past `key` (newer or older) matches the filter."""
    where, params = _where(user_id, only)
    where += f" AND (e.occurred_at, e.seq) {'>' if newer else '<'} (?, ?)"
    row = await conn.fetch_one(
        f"SELECT 1 FROM episode_actions e WHERE {where} LIMIT 1", [*params, *key]
    )
    return row is not None


async def latest_plays(
    conn: Connection, user_id: int, before: HistoryKey | None, limit: int
) -> list[HistoryRow]:
    """The user's play actions newest first by their own time, a chunk at a time
    (Continue listening reads chunks until it has found enough episodes)."""
    return await history_page(conn, user_id, HistoryFilter(action="play"), before, None, limit)


async def podcast_actions(
    conn: Connection, user_id: int, podcast_key: str, limit: int
) -> list[HistoryRow]:
    """The user's latest `limit` actions on one podcast, newest first by their time."""
    return await history_page(
        conn, user_id, HistoryFilter(podcast_key=podcast_key), None, None, limit
    )


async def podcast_devices(conn: Connection, user_id: int, podcast_key: str) -> list[str]:
    """The devices that sent actions on one podcast."""
    rows = await conn.fetch_all(
        "SELECT DISTINCT device_id FROM episode_actions "
        "WHERE user_id = ? AND podcast_key = ? AND device_id IS NOT NULL",
        (user_id, podcast_key),
    )
    return sorted(str(r[0]) for r in rows)
