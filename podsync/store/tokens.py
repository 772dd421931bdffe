"""Refresh tokens, stored only as SHA-256 hashes with their expiry."""

from __future__ import annotations

from podsync.store import Connection


async def add(conn: Connection, token_hash: bytes, user_id: int, expires_at: int, now: int) -> None:
    await conn.execute(
        "INSERT INTO refresh_tokens (token_hash, user_id, expires_at, created_at) "
        "VALUES (?, ?, ?, ?)",
        (token_hash, user_id, expires_at, now),
    )


async def user_for(conn: Connection, token_hash: bytes, now: int) -> int | None:
    """The user id of an unexpired refresh token, or None."""
    row = await conn.fetch_one(
        "SELECT user_id FROM refresh_tokens WHERE token_hash = ? AND expires_at > ?",
        (token_hash, now),
    )
    return None if row is None else int(row[0])


async def delete_for_user(conn: Connection, user_id: int) -> None:
    await conn.execute("DELETE FROM refresh_tokens WHERE user_id = ?", (user_id,))


async def delete_expired(conn: Connection, now: int) -> int:
    return await conn.execute("DELETE FROM refresh_tokens WHERE expires_at <= ?", (now,))
