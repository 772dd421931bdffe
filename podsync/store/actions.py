"""The action log: the first result of every action_id a user sent (idempotency)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from podsync.model import RecordedAction
from podsync.store import Connection

_CHUNK = 500


async def get_many(
    conn: Connection, user_id: int, action_ids: Iterable[str], newer_than: int
) -> dict[str, RecordedAction]:
    """Recorded actions among `action_ids` received after `newer_than` (retention)."""
    unique = sorted(set(action_ids))
    found: dict[str, RecordedAction] = {}
    for start in range(0, len(unique), _CHUNK):
        chunk = unique[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for row in await conn.fetch_all(
            "SELECT action_id, status, reason, sync_id, received_at, fingerprint FROM actions "
            f"WHERE user_id = ? AND received_at > ? AND action_id IN ({marks})",
            (user_id, newer_than, *chunk),
        ):
            found[row[0]] = RecordedAction(*row)
    return found


async def record_many(conn: Connection, user_id: int, records: Sequence[RecordedAction]) -> None:
    if not records:
        return
    # Upsert: a record past retention that prune() has not removed yet is superseded.
    await conn.execute_many(
        "INSERT INTO actions "
        "(user_id, action_id, status, reason, sync_id, received_at, fingerprint) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, action_id) DO UPDATE SET "
        "status = excluded.status, reason = excluded.reason, sync_id = excluded.sync_id, "
        "received_at = excluded.received_at, fingerprint = excluded.fingerprint",
        [
            (user_id, r.action_id, r.status, r.reason, r.sync_id, r.received_at, r.fingerprint)
            for r in records
        ],
    )


async def prune(conn: Connection, older_than: int) -> int:
    return await conn.execute("DELETE FROM actions WHERE received_at <= ?", (older_than,))
