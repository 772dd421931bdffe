"""Small server-wide values kept in the `meta` table."""

from __future__ import annotations

from podsync.store import Connection


async def get(conn: Connection, key: str) -> str | None:
    row = await conn.fetch_one("SELECT value FROM meta WHERE key = ?", (key,))
    return None if row is None else str(row[0])


async def put_if_absent(conn: Connection, key: str, value: str) -> str:
    """Store `value` unless the key exists; return the value that is stored."""
    await conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
    )
    stored = await get(conn, key)
    assert stored is not None
    return stored


async def next_change_seqs(conn: Connection, count: int) -> int:
    """Reserve `count` change sequence numbers; return the first. Call inside a write."""
    row = await conn.fetch_one(
        "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + ? AS TEXT) "
        "WHERE key = 'change_seq' RETURNING CAST(value AS INTEGER)",
        (count,),
    )
    assert row is not None, "migration 1 seeds change_seq"
    return int(row[0]) - count + 1


async def current_change_seq(conn: Connection) -> int:
    """The last change sequence number handed out."""
    value = await get(conn, "change_seq")
    assert value is not None, "migration 1 seeds change_seq"
    return int(value)


async def ping(conn: Connection) -> None:
    """One trivial query: the database answers."""
    await conn.fetch_one("SELECT 1")


async def schema_version(conn: Connection) -> int:
    """How many migrations this database has run."""
    row = await conn.fetch_one("PRAGMA user_version")
    return int(row[0]) if row else 0
