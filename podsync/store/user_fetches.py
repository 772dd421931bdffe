"""The fetches a person asked for besides the Subscribe form's checks (table
`user_fetches`): a Refresh that fetched, an address refused to their import form.
They count, with the checks of `feed_checks`, toward the bound on a person's fetches
a minute. Rows older than the window are deleted as new ones come, so the table
holds a minute's fetches at most.
"""

from __future__ import annotations

from podsync.store import Connection

REFRESH, REFUSED = "refresh", "refused"


async def forget_before(conn: Connection, before: int) -> None:
    """Delete the fetches made before `before`. Call in a write."""
    await conn.execute("DELETE FROM user_fetches WHERE fetched_at < ?", (before,))


async def made_by(conn: Connection, user_id: int, since: int) -> list[int]:
    """When the user's fetches since `since` were made, the oldest first."""
    rows = await conn.fetch_all(
        "SELECT fetched_at FROM user_fetches WHERE user_id = ? AND fetched_at >= ? "
        "ORDER BY fetched_at",
        (user_id, since),
    )
    return [int(r[0]) for r in rows]


async def record(conn: Connection, user_id: int, at: int, kind: str) -> None:
    """One more fetch of the user's (REFRESH or REFUSED). Call in a write."""
    await conn.execute(
        "INSERT INTO user_fetches (user_id, fetched_at, kind) VALUES (?, ?, ?)",
        (user_id, at, kind),
    )
