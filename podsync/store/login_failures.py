"""Failed logins, kept in the database so that every server process on it shares
them and a restart keeps them (contract 3, rev. 2). Usernames are stored as
SHA-256 digests: a row costs the same whatever a client sends as a name.

One row per wrong password tried for a name from an address (rev. 5): the
caller's keyed hash of the password (`password_key`) tells a repeat from a new
guess, so a device that keeps sending an old password is one failure, however
often it retries. The row keeps the first and the last try, how many tries, and
the door, client and reason of the last."""

from __future__ import annotations

import hashlib
from typing import Any

from podsync.model import LoginFailure
from podsync.store import Connection

# At most this many rows in all, whatever number of addresses an attacker has.
MAX_ROWS = 100_000

_SET_LAST_TRY = "failed_at = ?, attempts = attempts + 1, door = ?, client = ?, reason = ?"


def name_digest(name: str) -> bytes:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()


async def record(
    conn: Connection,
    name: str,
    password_key: bytes,
    failure: LoginFailure,
    since: int,
) -> bool:
    """Record one try of a wrong password at `failure.last_at` (with its address,
    door, client and reason); forget the failures last tried at or before `since`
    (out of the window) and the oldest beyond MAX_ROWS. True when this password is
    new for (name, address) in the window, False for a repeat. Call inside a write."""
    await conn.execute("DELETE FROM login_failures WHERE failed_at <= ?", (since,))
    digest = name_digest(name)
    last_try = (failure.last_at, failure.door, failure.client, failure.reason)
    repeated = await conn.execute(
        f"UPDATE login_failures SET {_SET_LAST_TRY} "
        "WHERE name_hash = ? AND address = ? AND password_key = ?",
        (*last_try, digest, failure.address, password_key),
    )
    if repeated:
        return False
    # A repeat written by another process since the UPDATE is still one row.
    await conn.execute(
        "INSERT INTO login_failures (name_hash, address, password_key, first_at, failed_at, "
        "attempts, door, client, reason) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?) "
        "ON CONFLICT (name_hash, address, password_key) DO UPDATE SET "
        "failed_at = excluded.failed_at, attempts = login_failures.attempts + 1, "
        "door = excluded.door, client = excluded.client, reason = excluded.reason",
        (digest, failure.address, password_key, failure.last_at, *last_try),
    )
    # Ids grow with each new row, so the newest MAX_ROWS rows made are the ids above
    # max(id) - MAX_ROWS (a repeat keeps its row's id: it is one failure).
    await conn.execute(
        "DELETE FROM login_failures WHERE id <= (SELECT max(id) FROM login_failures) - ?",
        (MAX_ROWS,),
    )
    return True


async def nth_newest_for_pair(
    conn: Connection, name: str, address: str, since: int, n: int
) -> int | None:
    """The last try of the n-th newest wrong password of (name, address) after
    `since`, if there are n of them."""
    row = await conn.fetch_one(
        "SELECT failed_at FROM login_failures "
        "WHERE name_hash = ? AND address = ? AND failed_at > ? "
        "ORDER BY failed_at DESC LIMIT 1 OFFSET ?",
        (name_digest(name), address, since, n - 1),
    )
    return None if row is None else int(row[0])


async def nth_newest_for_address(conn: Connection, address: str, since: int, n: int) -> int | None:
    """The last try of the n-th newest failure from `address` (a wrong password of
    any name) after `since`."""
    row = await conn.fetch_one(
        "SELECT failed_at FROM login_failures WHERE address = ? AND failed_at > ? "
        "ORDER BY failed_at DESC LIMIT 1 OFFSET ?",
        (address, since, n - 1),
    )
    return None if row is None else int(row[0])


async def nth_newest_password_of_name(
    conn: Connection, name: str, since: int, n: int
) -> int | None:
    """The last try of the n-th newest distinct wrong password of `name` after
    `since`, from any address, if there are n of them."""
    row = await conn.fetch_one(
        "SELECT last_at FROM (SELECT password_key, max(failed_at) AS last_at "
        "FROM login_failures WHERE name_hash = ? AND failed_at > ? GROUP BY password_key) "
        "AS guesses ORDER BY last_at DESC LIMIT 1 OFFSET ?",
        (name_digest(name), since, n - 1),
    )
    return None if row is None else int(row[0])


async def guesses_at_name(conn: Connection, name: str, since: int) -> tuple[int, int]:
    """(distinct wrong passwords, addresses) of `name` after `since`."""
    row = await conn.fetch_one(
        "SELECT count(DISTINCT password_key), count(DISTINCT address) FROM login_failures "
        "WHERE name_hash = ? AND failed_at > ?",
        (name_digest(name), since),
    )
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


async def for_name(conn: Connection, name: str, since: int) -> list[LoginFailure]:
    """The failures of `name` last tried after `since`, newest first."""
    rows = await conn.fetch_all(
        "SELECT address, first_at, failed_at, attempts, door, client, reason "
        "FROM login_failures WHERE name_hash = ? AND failed_at > ? ORDER BY failed_at DESC",
        (name_digest(name), since),
    )
    return [_failure(row) for row in rows]


def _failure(row: Any) -> LoginFailure:
    address, first_at, last_at, attempts, door, client, reason = row
    times = int(first_at), int(last_at), int(attempts)
    return LoginFailure(str(address), *times, str(door), str(client), str(reason))


async def clear_name(conn: Connection, name: str) -> None:
    """Forget every failure recorded for `name` (unlock, new password)."""
    await conn.execute("DELETE FROM login_failures WHERE name_hash = ?", (name_digest(name),))
