"""The addresses the web UI's Subscribe form fetched in the last minute (table
`feed_checks`): one row per address, with who asked, when, and the answer once the
fetch ended. Rows older than the window are deleted as new checks come, so the table
holds a minute's checks at most.
"""

from __future__ import annotations

from dataclasses import dataclass

from podsync.store import Connection

# The answers a check can have; None while its fetch runs.
FEED, NOT_A_FEED, UNREACHABLE = "feed", "not_a_feed", "unreachable"


@dataclass(frozen=True, slots=True)
class FeedCheck:
    url_key: str
    checked_at: int
    answer: str | None
    reason: str


async def forget_before(conn: Connection, before: int) -> None:
    """Delete the checks made before `before`. Call in a write."""
    await conn.execute("DELETE FROM feed_checks WHERE checked_at < ?", (before,))


async def find(conn: Connection, url_key: str) -> FeedCheck | None:
    row = await conn.fetch_one(
        "SELECT url_key, checked_at, answer, reason FROM feed_checks WHERE url_key = ?",
        (url_key,),
    )
    return None if row is None else FeedCheck(str(row[0]), int(row[1]), row[2], str(row[3]))


async def made_by(conn: Connection, user_id: int, since: int) -> list[int]:
    """When the user's checks since `since` were made, the oldest first."""
    rows = await conn.fetch_all(
        "SELECT checked_at FROM feed_checks WHERE user_id = ? AND checked_at >= ? "
        "ORDER BY checked_at",
        (user_id, since),
    )
    return [int(r[0]) for r in rows]


async def claim(conn: Connection, url_key: str, user_id: int, now: int) -> bool:
    """Record a check of `url_key` for the user, its fetch under way; False when a
    check of it is recorded already (another process's, a moment ago). Call in a
    write, after `forget_before` has removed the checks past the window."""
    return bool(
        await conn.execute(
            "INSERT INTO feed_checks (url_key, user_id, checked_at) VALUES (?, ?, ?) "
            "ON CONFLICT (url_key) DO NOTHING",
            (url_key, user_id, now),
        )
    )


async def answer(conn: Connection, url_key: str, checked_at: int, kind: str, reason: str) -> None:
    """The answer of the check of `url_key` made at `checked_at`. Call in a write."""
    await conn.execute(
        "UPDATE feed_checks SET answer = ?, reason = ? WHERE url_key = ? AND checked_at = ?",
        (kind, reason, url_key, checked_at),
    )
