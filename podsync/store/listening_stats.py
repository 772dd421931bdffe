"""The reads of a person's listening statistics: their play actions since a moment
(the index on user and time), with the podcast of each."""

from __future__ import annotations

from typing import NamedTuple

from podsync.episode_keys import ACTION_CODES
from podsync.store import Connection


class PlayRow(NamedTuple):
    occurred_at: int  # microseconds since the epoch
    episode_id: int
    podcast_key: str
    started: int | None
    position: int | None
    total: int | None


async def plays_since(conn: Connection, user_id: int, since_us: int) -> list[PlayRow]:
    """The user's play actions that happened at or after `since_us`, oldest first."""
    rows = await conn.fetch_all(
        "SELECT a.occurred_at, a.episode_id, f.url_key, a.started, a.position, a.total "
        "FROM episode_actions a JOIN episodes e ON e.id = a.episode_id "
        "JOIN episode_feeds f ON f.id = e.feed_id "
        "WHERE a.user_id = ? AND a.occurred_at >= ? AND a.action = ? "
        "ORDER BY a.occurred_at, a.seq",
        (user_id, since_us, ACTION_CODES["play"]),
    )
    return [PlayRow(int(t), int(e), str(k), _int(s), _int(p), _int(n)) for t, e, k, s, p, n in rows]


async def played_before(conn: Connection, user_id: int, before_us: int) -> bool:
    """Whether the user has any action before this time (the index on user and
    time: one row read)."""
    row = await conn.fetch_one(
        "SELECT 1 FROM episode_actions WHERE user_id = ? AND occurred_at < ? LIMIT 1",
        (user_id, before_us),
    )
    return row is not None


def _int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]
