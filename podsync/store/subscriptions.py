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


_INSERT = (
    "INSERT INTO subscriptions (user_id, sync_id, guid, feed_url, url_key, title, subscribed_at, "
    "unsubscribed_at, last_updated, last_client_id, change_seq, changed_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE = (
    "UPDATE subscriptions SET guid = ?, feed_url = ?, url_key = ?, title = ?, subscribed_at = ?, "
    "unsubscribed_at = ?, last_updated = ?, last_client_id = ?, change_seq = ?, changed_at = ? "
    "WHERE user_id = ? AND sync_id = ?"
)


async def save(
    conn: aiosqlite.Connection,
    created: Sequence[Subscription],
    changed: Sequence[Subscription],
    moved_keys: Sequence[Subscription],
) -> None:
    """Write a batch's outcome. `moved_keys` are changed entities whose url key changed:
    their keys are parked on a unique placeholder first, so that keys swapped between
    entities within one batch never trip the (user_id, url_key) unique index."""
    if moved_keys:
        await conn.executemany(
            "UPDATE subscriptions SET url_key = '#' || sync_id WHERE user_id = ? AND sync_id = ?",
            [(s.user_id, s.sync_id) for s in moved_keys],
        )
    if changed:
        await conn.executemany(
            _UPDATE,
            [
                (
                    s.guid,
                    s.feed_url,
                    s.url_key,
                    s.title,
                    s.subscribed_at,
                    s.unsubscribed_at,
                    s.last_updated,
                    s.last_client_id,
                    s.change_seq,
                    s.changed_at,
                    s.user_id,
                    s.sync_id,
                )
                for s in changed
            ],
        )
    if created:
        await conn.executemany(
            _INSERT,
            [
                (
                    s.user_id,
                    s.sync_id,
                    s.guid,
                    s.feed_url,
                    s.url_key,
                    s.title,
                    s.subscribed_at,
                    s.unsubscribed_at,
                    s.last_updated,
                    s.last_client_id,
                    s.change_seq,
                    s.changed_at,
                )
                for s in created
            ],
        )


def _keyset(include_unsubscribed: bool) -> tuple[str, str]:
    """The indexed table and filter of a keyset query. The partial index holds only
    subscribed rows, so a page never steps over unsubscribed ones; INDEXED BY keeps
    the planner from choosing otherwise without statistics."""
    if include_unsubscribed:
        return "subscriptions INDEXED BY subscriptions_all", ""
    return "subscriptions INDEXED BY subscriptions_active", " AND unsubscribed_at IS NULL"


async def _select_keyset(
    conn: aiosqlite.Connection, include_unsubscribed: bool, where: str, params: Sequence[Any]
) -> list[Subscription]:
    table, condition = _keyset(include_unsubscribed)
    sql = f"SELECT {_COLUMNS} FROM {table} WHERE user_id = ? AND {where.format(condition)}"
    async with conn.execute(sql, params) as cur:
        return [_row(r) for r in await cur.fetchall()]


async def page_after(
    conn: aiosqlite.Connection, user_id: int, after_id: int, include_unsubscribed: bool, limit: int
) -> list[Subscription]:
    """Up to `limit` entities with id > after_id, in creation order (keyset)."""
    return await _select_keyset(
        conn, include_unsubscribed, "id > ?{} ORDER BY id LIMIT ?", (user_id, after_id, limit)
    )


async def page_before(
    conn: aiosqlite.Connection, user_id: int, before_id: int, include_unsubscribed: bool, limit: int
) -> list[Subscription]:
    """Up to `limit` entities with id < before_id, nearest first (for a previous page)."""
    return await _select_keyset(
        conn,
        include_unsubscribed,
        "id < ?{} ORDER BY id DESC LIMIT ?",
        (user_id, before_id, limit),
    )


async def exists_beyond(
    conn: aiosqlite.Connection, user_id: int, pivot: int, after: bool, include_unsubscribed: bool
) -> bool:
    """Whether a matching entity lies after (or before) the id `pivot`."""
    op = ">" if after else "<"
    table, condition = _keyset(include_unsubscribed)
    sql = f"SELECT EXISTS (SELECT 1 FROM {table} WHERE user_id = ? AND id {op} ?{condition})"
    async with conn.execute(sql, (user_id, pivot)) as cur:
        row = await cur.fetchone()
    return bool(row and row[0])


async def changes_after(
    conn: aiosqlite.Connection, user_id: int, after_seq: int, exclude_client: str | None, limit: int
) -> list[Subscription]:
    """Entities changed after `after_seq`, in change order, optionally leaving out those
    whose last writer is `exclude_client`."""
    if exclude_client is None:
        return await _select(
            conn,
            "user_id = ? AND change_seq > ? ORDER BY change_seq LIMIT ?",
            (user_id, after_seq, limit),
        )
    return await _select(
        conn,
        "user_id = ? AND change_seq > ? AND last_client_id IS NOT ? ORDER BY change_seq LIMIT ?",
        (user_id, after_seq, exclude_client, limit),
    )


async def first_change_since(conn: aiosqlite.Connection, user_id: int, since: int) -> int | None:
    """The smallest change_seq among the user's entities changed at or after `since`."""
    async with conn.execute(
        "SELECT min(change_seq) FROM subscriptions WHERE user_id = ? AND changed_at >= ?",
        (user_id, since),
    ) as cur:
        row = await cur.fetchone()
    return None if row is None or row[0] is None else int(row[0])
