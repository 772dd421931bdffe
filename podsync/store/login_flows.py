"""Login Flow v2 requests (Nextcloud's protocol, for AntennaPod's "Nextcloud"
option): one row per flow an app started, keyed by a random flow id (in the
browser's URL) and the SHA-256 of the app's poll token (the token is never stored).
State: pending, then granted (with the user) or cancelled, then spent by the poll.
A granted flow not yet polled is cancelled by whatever ends the user's logins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.store import Connection

PENDING, GRANTED, CANCELLED, SPENT = "pending", "granted", "cancelled", "spent"


@dataclass(frozen=True, slots=True)
class LoginFlow:
    flow_id: str
    user_agent: str
    state: str
    user_id: int | None
    expires_at: int
    address: str  # the client address that started it
    created_at: int


_COLUMNS = "flow_id, user_agent, state, user_id, expires_at, address, created_at"


def _flow(row: Any) -> LoginFlow:
    flow_id, agent, state, user_id, expires_at, address, created_at = row
    return LoginFlow(
        str(flow_id),
        str(agent),
        str(state),
        None if user_id is None else int(user_id),
        int(expires_at),
        str(address),
        int(created_at),
    )


async def add(
    conn: Connection,
    flow_id: str,
    token_hash: bytes,
    user_agent: str,
    address: str,
    now: int,
    expires_at: int,
) -> None:
    await conn.execute(
        "INSERT INTO login_flows "
        "(flow_id, token_hash, user_agent, address, created_at, expires_at, state) "
        "VALUES (?, ?, ?, ?, ?, ?, 'pending')",
        (flow_id, token_hash, user_agent, address, now, expires_at),
    )


async def count_from(conn: Connection, address: str, since: int) -> int:
    row = await conn.fetch_one(
        "SELECT count(*) FROM login_flows WHERE address = ? AND created_at >= ?",
        (address, since),
    )
    return int(row[0])


async def oldest_from(conn: Connection, address: str, since: int) -> int | None:
    row = await conn.fetch_one(
        "SELECT min(created_at) FROM login_flows WHERE address = ? AND created_at >= ?",
        (address, since),
    )
    return None if row is None or row[0] is None else int(row[0])


async def get(conn: Connection, flow_id: str) -> LoginFlow | None:
    row = await conn.fetch_one(f"SELECT {_COLUMNS} FROM login_flows WHERE flow_id = ?", (flow_id,))
    return None if row is None else _flow(row)


async def decide(conn: Connection, flow_id: str, state: str, user_id: int, now: int) -> bool:
    """Grant or cancel a pending flow that has not expired; whether it was."""
    changed = await conn.execute(
        "UPDATE login_flows SET state = ?, user_id = ? "
        "WHERE flow_id = ? AND state = 'pending' AND expires_at > ?",
        (state, user_id, flow_id, now),
    )
    return changed == 1


async def spend(conn: Connection, token_hash: bytes, now: int) -> LoginFlow | None:
    """The granted, unexpired flow of this poll token, marked spent; None otherwise
    (unknown, pending, cancelled, expired or spent before)."""
    row = await conn.fetch_one(
        f"SELECT {_COLUMNS} FROM login_flows "
        "WHERE token_hash = ? AND state = 'granted' AND expires_at > ?",
        (token_hash, now),
    )
    if row is None:
        return None
    changed = await conn.execute(
        "UPDATE login_flows SET state = 'spent' WHERE token_hash = ? AND state = 'granted'",
        (token_hash,),
    )
    return _flow(row) if changed == 1 else None


async def end_granted_for_user(conn: Connection, user_id: int) -> int:
    """Cancel the user's granted flows that no poll has spent yet; how many. Kept
    (not deleted) so that they still count in their address's throttle."""
    return await conn.execute(
        "UPDATE login_flows SET state = 'cancelled' WHERE user_id = ? AND state = 'granted'",
        (user_id,),
    )


async def prune(conn: Connection, before: int) -> int:
    """Delete the flows that expired before `before`; how many."""
    return await conn.execute("DELETE FROM login_flows WHERE expires_at < ?", (before,))
