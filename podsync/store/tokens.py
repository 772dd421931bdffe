"""Refresh tokens, stored only as SHA-256 hashes with their expiry."""

from __future__ import annotations

import aiosqlite

from podsync.store import fetch_one


async def add(
    conn: aiosqlite.Connection, token_hash: bytes, user_id: int, expires_at: int, now: int
) -> None:
    await conn.execute(
        "INSERT INTO refresh_tokens (token_hash, user_id, expires_at, created_at) "
        "VALUES (?, ?, ?, ?)",
        (token_hash, user_id, expires_at, now),
    )


async def user_for(conn: aiosqlite.Connection, token_hash: bytes, now: int) -> int | None:
    """The user id of an unexpired refresh token, or None."""
    row = await fetch_one(
        conn,
        "SELECT user_id FROM refresh_tokens WHERE token_hash = ? AND expires_at > ?",
        (token_hash, now),
    )
    return None if row is None else int(row[0])


async def delete_for_user(conn: aiosqlite.Connection, user_id: int) -> None:
    await conn.execute("DELETE FROM refresh_tokens WHERE user_id = ?", (user_id,))


async def delete_expired(conn: aiosqlite.Connection, now: int) -> int:
    cur = await conn.execute("DELETE FROM refresh_tokens WHERE expires_at <= ?", (now,))
    return cur.rowcount
