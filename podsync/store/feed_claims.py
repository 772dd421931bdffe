"""Claims on feeds that no fetch will end: those of a process that is gone, and the
refusals a changed setting no longer makes (table `feed_info`; the claims themselves
are made in `feed_info.claim_due` and `claim_now`, and ended by the fetch's record)."""

from __future__ import annotations

from collections.abc import Sequence

from podsync.store import Connection


async def claimers(conn: Connection, now: int) -> list[str]:
    """Who holds claims that have not run out at `now` (services/feeds/claims.py)."""
    rows = await conn.fetch_all(
        "SELECT DISTINCT claimed_by FROM feed_info "
        "WHERE claimed_by IS NOT NULL AND next_try_at > ?",
        (now,),
    )
    return [str(row[0]) for row in rows]


async def release_claims(conn: Connection, claimers: Sequence[str], now: int) -> int:
    """Make the feeds that `claimers` claimed and never recorded due at `now`; return
    how many. Call in a write."""
    released = 0
    for claimer in claimers:
        released += await conn.execute(
            "UPDATE feed_info SET next_try_at = ?, claimed_by = NULL "
            "WHERE claimed_by = ? AND next_try_at > ?",
            (now, claimer, now),
        )
    return released


async def retry_refused(conn: Connection, prefix: str, now: int) -> int:
    """Make the feeds whose last fetch was refused (their reason starts with
    `prefix`, which holds no LIKE wildcard) and that wait for a later try due at
    `now`, the backoff forgotten; return how many. Call in a write."""
    return await conn.execute(
        "UPDATE feed_info SET next_try_at = ?, failures = 0 "
        "WHERE last_error LIKE ? AND next_try_at > ? AND claimed_by IS NULL",
        (now, prefix + "%", now),
    )
