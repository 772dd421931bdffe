"""Subscriptions: the entities the sync rules work on."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import aiosqlite


@dataclass(frozen=True)
class Subscription:
    id: int | None  # None until inserted
    user_id: int
    sync_id: str
    guid: str
    feed_url: str
    url_key: str
    title: str | None
    subscribed_at: int
    unsubscribed_at: int | None
    last_updated: int
    last_client_id: str | None
    change_seq: int
    changed_at: int

    @property
    def subscribed(self) -> bool:
        return self.unsubscribed_at is None


_COLUMNS = (
    "id, user_id, sync_id, guid, feed_url, url_key, title, subscribed_at, unsubscribed_at, "
    "last_updated, last_client_id, change_seq, changed_at"
)
# SQLite's default limit of bound parameters is large, but keep IN lists modest.
_CHUNK = 500


def _row(row: Any) -> Subscription:
    return Subscription(*row)


async def _select(
    conn: aiosqlite.Connection, where: str, params: Sequence[Any]
) -> list[Subscription]:
    async with conn.execute(f"SELECT {_COLUMNS} FROM subscriptions WHERE {where}", params) as cur:
        return [_row(r) for r in await cur.fetchall()]


async def get_by_sync_id(
    conn: aiosqlite.Connection, user_id: int, sync_id: str
) -> Subscription | None:
    rows = await _select(conn, "user_id = ? AND sync_id = ?", (user_id, sync_id))
    return rows[0] if rows else None


async def find_matching(
    conn: aiosqlite.Connection,
    user_id: int,
    sync_ids: Iterable[str],
    url_keys: Iterable[str],
    guids: Iterable[str],
) -> list[Subscription]:
    """The user's entities with any of these sync ids, url keys or guids (each once)."""
    found: dict[int, Subscription] = {}
    for column, values in (("sync_id", sync_ids), ("url_key", url_keys), ("guid", guids)):
        unique = sorted(set(values))
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for sub in await _select(
                conn, f"user_id = ? AND {column} IN ({marks})", (user_id, *chunk)
            ):
                assert sub.id is not None
                found[sub.id] = sub
    return sorted(found.values(), key=lambda s: s.id or 0)


async def list_all(
    conn: aiosqlite.Connection, user_id: int, include_unsubscribed: bool
) -> list[Subscription]:
    """Every entity of the user in creation order (OPML export)."""
    where = "user_id = ?" if include_unsubscribed else "user_id = ? AND unsubscribed_at IS NULL"
    return await _select(conn, where + " ORDER BY id", (user_id,))
