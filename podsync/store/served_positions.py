"""What each reader of a gpodder or Nextcloud stream was last served (schema step 16):
in the database, so that every worker and process answers a write with what another
one served (gpodder spec 4.4; the Nextcloud API's window). Keyed by the user and a
text naming the session or device and the stream (services/gpodder/cursor.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from podsync.store import Connection
from podsync.store.value_lists import in_list


async def get(conn: Connection, user_id: int, keys: Sequence[str]) -> dict[str, tuple[int, int]]:
    """{key: (position, written_at)} of the keys stored for the user."""
    if not keys:
        return {}
    marks, bound = in_list(keys, dialect=conn.dialect)
    rows = await conn.fetch_all(
        f"SELECT key, position, written_at FROM served_positions "
        f"WHERE user_id = ? AND key IN ({marks})",
        (user_id, *bound),
    )
    return {row[0]: (row[1], row[2]) for row in rows}


async def put(conn: Connection, user_id: int, positions: Mapping[str, tuple[int, int]]) -> None:
    """Store each key's (position, written at): a row written later stays as it is."""
    await conn.execute_many(
        "INSERT INTO served_positions (user_id, key, position, written_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (user_id, key) DO UPDATE "
        "SET position = excluded.position, written_at = excluded.written_at "
        "WHERE served_positions.written_at <= excluded.written_at",
        [(user_id, key, position, at) for key, (position, at) in positions.items()],
    )


async def forget(conn: Connection, user_id: int, keys: Sequence[str]) -> None:
    await conn.execute_many(
        "DELETE FROM served_positions WHERE user_id = ? AND key = ?",
        [(user_id, key) for key in keys],
    )


async def prune(conn: Connection, sessions_before: int, before: int) -> int:
    """Delete the positions of sessions (keys `s:...`) written before `sessions_before`
    and every other written before `before` (microseconds, earlier); how many rows."""
    return await conn.execute(
        "DELETE FROM served_positions WHERE written_at < ? AND (key LIKE 's:%' OR written_at < ?)",
        (sessions_before, before),
    )
