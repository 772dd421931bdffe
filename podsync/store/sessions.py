"""gpodder sessions ended by `logout.json`: kept in the database so that every
process refuses the cookie, and a restart does not bring it back, until the cookie
would have expired anyway."""

from __future__ import annotations

from podsync.store import Connection


async def revoke(conn: Connection, session_id: str, expires_at: int) -> None:
    """Refuse the session's cookies until `expires_at` (microseconds)."""
    await conn.execute(
        "INSERT INTO gpodder_revoked_sessions (session_id, expires_at) VALUES (?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET expires_at = excluded.expires_at",
        (session_id, expires_at),
    )


async def is_revoked(conn: Connection, session_id: str) -> bool:
    row = await conn.fetch_one(
        "SELECT 1 FROM gpodder_revoked_sessions WHERE session_id = ?", (session_id,)
    )
    return row is not None


async def prune(conn: Connection, now: int) -> int:
    """Delete the revocations of sessions whose cookies have all expired by `now`."""
    return await conn.execute("DELETE FROM gpodder_revoked_sessions WHERE expires_at <= ?", (now,))
