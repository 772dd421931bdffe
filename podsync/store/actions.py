"""The action log: the first result of every action_id a user sent (idempotency)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from podsync.model import RecordedAction
from podsync.store import Connection
from podsync.store.value_lists import each_key, in_list

_CHUNK = 500
_COLUMNS = "action_id, status, reason, sync_id, received_at, fingerprint"
# PostgreSQL gets the ids as one array and looks each up on its own (`each_key`).
# Left to choose, before its first ANALYZE of a growing table, it served
# `user_id = ? AND action_id IN (...)` from the primary key's `user_id` range and
# read every action row of the user (18 ms a batch at 30,000 rows). Retention is
# checked here, not in SQL, for the same reason: beside an index on received_at it
# invited a second such scan.
_GET_EACH = each_key(
    [("action_id", "text")],
    f"SELECT {_COLUMNS} FROM actions WHERE user_id = ? AND action_id = k.action_id",
)
_RECORD_UPSERT = (
    " ON CONFLICT (user_id, action_id) DO UPDATE SET "
    "status = excluded.status, reason = excluded.reason, sync_id = excluded.sync_id, "
    "received_at = excluded.received_at, fingerprint = excluded.fingerprint"
)
_RECORD = (
    "INSERT INTO actions "
    "(user_id, action_id, status, reason, sync_id, received_at, fingerprint) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)" + _RECORD_UPSERT
)
# PostgreSQL: the batch's rows as arrays, one statement (and one executor run)
# instead of one per row.
_RECORD_ARRAYS = (
    "INSERT INTO actions "
    "(user_id, action_id, status, reason, sync_id, received_at, fingerprint) "
    "SELECT ?::bigint, * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[], "
    "?::text[])" + _RECORD_UPSERT
)


async def get_many(
    conn: Connection, user_id: int, action_ids: Iterable[str], newer_than: int
) -> dict[str, RecordedAction]:
    """Recorded actions among `action_ids` received after `newer_than` (retention)."""
    unique = sorted(set(action_ids))
    if not unique:
        return {}
    if conn.dialect == "postgresql":
        rows = await conn.fetch_all(_GET_EACH, (unique, user_id))
    else:
        rows = []
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            marks, bound = in_list(chunk, _CHUNK, dialect=conn.dialect)
            rows += await conn.fetch_all(
                f"SELECT {_COLUMNS} FROM actions WHERE user_id = ? AND action_id IN ({marks})",
                (user_id, *bound),
            )
    return {row[0]: RecordedAction(*row) for row in rows if row[4] > newer_than}


async def record_many(conn: Connection, user_id: int, records: Sequence[RecordedAction]) -> None:
    """Record each action's result; the ids are distinct. A record past retention that
    prune() has not removed yet is superseded (upsert)."""
    if not records:
        return
    if conn.dialect == "postgresql":
        columns = list(zip(*(_fields(r) for r in records), strict=True))
        await conn.execute(_RECORD_ARRAYS, (user_id, *(list(c) for c in columns)))
        return
    await conn.execute_many(_RECORD, [(user_id, *_fields(r)) for r in records])


def _fields(
    r: RecordedAction,
) -> tuple[str, str, str | None, str | None, int, str | None]:
    return (r.action_id, r.status, r.reason, r.sync_id, r.received_at, r.fingerprint)


async def prune(conn: Connection, older_than: int, limit: int) -> int:
    """Delete the `limit` oldest action ids received at or before `older_than` (and
    those received in the same microsecond as the last of them: one batch's share
    it); how many went. Both statements go by the index on received_at."""
    row = await conn.fetch_one(
        "SELECT received_at FROM actions WHERE received_at <= ? "
        "ORDER BY received_at LIMIT 1 OFFSET ?",
        (older_than, limit - 1),
    )
    upto = older_than if row is None else int(row[0])
    return await conn.execute("DELETE FROM actions WHERE received_at <= ?", (upto,))
