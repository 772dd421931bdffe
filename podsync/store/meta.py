"""Small server-wide values kept in the `meta` table."""

from __future__ import annotations

import aiosqlite

from podsync.store import fetch_one


async def get(conn: aiosqlite.Connection, key: str) -> str | None:
    row = await fetch_one(conn, "SELECT value FROM meta WHERE key = ?", (key,))
    return None if row is None else str(row[0])


async def put_if_absent(conn: aiosqlite.Connection, key: str, value: str) -> str:
    """Store `value` unless the key exists; return the value that is stored."""
    await conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
    )
    stored = await get(conn, key)
    assert stored is not None
    return stored


async def next_change_seqs(conn: aiosqlite.Connection, count: int) -> int:
    """Reserve `count` change sequence numbers; return the first. Call inside a write."""
    row = await fetch_one(
        conn,
        "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + ? AS TEXT) "
        "WHERE key = 'change_seq' RETURNING CAST(value AS INTEGER)",
        (count,),
    )
    assert row is not None, "migration 1 seeds change_seq"
    return int(row[0]) - count + 1


async def current_change_seq(conn: aiosqlite.Connection) -> int:
    """The last change sequence number handed out."""
    value = await get(conn, "change_seq")
    assert value is not None, "migration 1 seeds change_seq"
    return int(value)


async def ping(conn: aiosqlite.Connection) -> None:
    """The cheapest statement that needs the database to answer."""
    await fetch_one(conn, "SELECT 1")


async def touch(conn: aiosqlite.Connection) -> None:
    """Rewrite one row unchanged: a write SQLite refuses on a read-only database.
    Call inside a write."""
    await conn.execute("UPDATE meta SET value = value WHERE key = 'change_seq'")
