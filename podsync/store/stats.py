"""Server-wide counts for the metrics gauges; nothing per user leaves this module."""

from __future__ import annotations

from dataclasses import dataclass

from podsync.store import Connection


@dataclass(frozen=True)
class Counts:
    users: int
    enabled_users: int
    subscriptions: int  # subscribed feeds, every user together


async def counts(conn: Connection) -> Counts:
    row = await conn.fetch_one(
        "SELECT (SELECT count(*) FROM users), "
        "(SELECT count(*) FROM users WHERE enabled <> 0), "
        "(SELECT count(*) FROM subscriptions WHERE unsubscribed_at IS NULL)"
    )
    return Counts(int(row[0]), int(row[1]), int(row[2]))
