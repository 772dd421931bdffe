"""Failed logins, kept in the database so that every server process on it shares
them and a restart keeps them (contract 3, rev. 2). Usernames are stored as
SHA-256 digests: a row costs the same whatever a client sends as a name."""

from __future__ import annotations

import hashlib

from podsync.store import Connection

# At most this many rows in all, whatever number of addresses an attacker has.
MAX_ROWS = 100_000


def name_digest(name: str) -> bytes:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()


async def record(conn: Connection, name: str, address: str, now: int, since: int) -> None:
    """Record one failure at `now`; forget the ones at or before `since` (out of the
    window) and the oldest beyond MAX_ROWS. Call inside a write."""
    await conn.execute("DELETE FROM login_failures WHERE failed_at <= ?", (since,))
    await conn.execute(
        "INSERT INTO login_failures (name_hash, address, failed_at) VALUES (?, ?, ?)",
        (name_digest(name), address, now),
    )
    # Ids only grow, so the newest MAX_ROWS are the ids above max(id) - MAX_ROWS.
    await conn.execute(
        "DELETE FROM login_failures WHERE id <= (SELECT max(id) FROM login_failures) - ?",
        (MAX_ROWS,),
    )


async def nth_newest_for_pair(
    conn: Connection, name: str, address: str, since: int, n: int
) -> int | None:
    """The time of the n-th newest failure of (name, address) after `since`, if any."""
    row = await conn.fetch_one(
        "SELECT failed_at FROM login_failures "
        "WHERE name_hash = ? AND address = ? AND failed_at > ? "
        "ORDER BY failed_at DESC LIMIT 1 OFFSET ?",
        (name_digest(name), address, since, n - 1),
    )
    return None if row is None else int(row[0])


async def nth_newest_for_address(conn: Connection, address: str, since: int, n: int) -> int | None:
    """The time of the n-th newest failure from `address` (any name) after `since`."""
    row = await conn.fetch_one(
        "SELECT failed_at FROM login_failures WHERE address = ? AND failed_at > ? "
        "ORDER BY failed_at DESC LIMIT 1 OFFSET ?",
        (address, since, n - 1),
    )
    return None if row is None else int(row[0])


async def clear_name(conn: Connection, name: str) -> None:
    """Forget every failure recorded for `name` (unlock, new password)."""
    await conn.execute("DELETE FROM login_failures WHERE name_hash = ?", (name_digest(name),))
