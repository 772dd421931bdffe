"""The action log: the first result of every action_id a user sent (idempotency)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import aiosqlite

from podsync.store import fetch_all

_CHUNK = 500


@dataclass(frozen=True)
class RecordedAction:
    action_id: str
    status: str
    reason: str | None
    sync_id: str | None
    received_at: int


async def get_many(
    conn: aiosqlite.Connection, user_id: int, action_ids: Iterable[str], newer_than: int
) -> dict[str, RecordedAction]:
    """Recorded actions among `action_ids` received after `newer_than` (retention)."""
    unique = sorted(set(action_ids))
    found: dict[str, RecordedAction] = {}
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for row in await fetch_all(
            conn,
            "SELECT action_id, status, reason, sync_id, received_at FROM actions "
            f"WHERE user_id = ? AND received_at > ? AND action_id IN ({marks})",
            (user_id, newer_than, *chunk),
        ):
            found[row[0]] = RecordedAction(*row)
    return found


async def record_many(
    conn: aiosqlite.Connection, user_id: int, records: Sequence[RecordedAction]
) -> None:
    # REPLACE: a record past retention that prune() has not removed yet is superseded.
    await conn.executemany(
        "INSERT OR REPLACE INTO actions "
        "(user_id, action_id, status, reason, sync_id, received_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(user_id, r.action_id, r.status, r.reason, r.sync_id, r.received_at) for r in records],
    )


async def prune(conn: aiosqlite.Connection, older_than: int) -> int:
    cur = await conn.execute("DELETE FROM actions WHERE received_at <= ?", (older_than,))
    return cur.rowcount
