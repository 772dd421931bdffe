"""Where each name signed in successfully lately (table `login_successes`): one row
per name and address (an IPv6 address by its /64), with the last time. Past the
bound on guesses at a name, those addresses keep signing in (services/throttle.py).
Names are stored as SHA-256 digests, as in `login_failures`.
"""

from __future__ import annotations

from podsync.store import Connection
from podsync.store.login_failures import name_digest


async def note(conn: Connection, name: str, address: str, at: int, forget_before: int) -> None:
    """The name signed in from `address` at `at`; forget what is older than
    `forget_before`. Call in a write."""
    await conn.execute("DELETE FROM login_successes WHERE signed_in_at < ?", (forget_before,))
    await conn.execute(
        "INSERT INTO login_successes (name_hash, address, signed_in_at) VALUES (?, ?, ?) "
        "ON CONFLICT (name_hash, address) DO UPDATE SET signed_in_at = excluded.signed_in_at",
        (name_digest(name), address, at),
    )


async def signed_in_since(conn: Connection, name: str, address: str, since: int) -> bool:
    """True when the name signed in from `address` at or after `since`."""
    row = await conn.fetch_one(
        "SELECT 1 FROM login_successes WHERE name_hash = ? AND address = ? AND signed_in_at >= ?",
        (name_digest(name), address, since),
    )
    return row is not None


async def clear_name(conn: Connection, name: str) -> None:
    """Forget where the name signed in (its account deleted)."""
    await conn.execute("DELETE FROM login_successes WHERE name_hash = ?", (name_digest(name),))
