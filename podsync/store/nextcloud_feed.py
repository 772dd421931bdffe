"""The subscription reads of the Nextcloud gpoddersync API: what changed since a
moment of the server's clock (its `since` is Unix seconds, not a cursor), by the
entities' `changed_at`, never a client's clock. (Its episode actions:
`store.episode_actions`, by the second each was received.)"""

from __future__ import annotations

from podsync.store import Connection


def _distinct(conn: Connection) -> str:
    return "IS NOT" if conn.dialect == "sqlite" else "IS DISTINCT FROM"


async def changed_since(
    conn: Connection, user_id: int, from_us: int, since_us: int, own_client: str | None
) -> list[tuple[str, bool]]:
    """(feed_url, subscribed) of the entities changed at or after `from_us`, each once in
    its final state (the index on (user_id, changed_at)); those changed before
    `since_us` only when `own_client` was not their last writer."""
    rows = await conn.fetch_all(
        "SELECT feed_url, unsubscribed_at IS NULL FROM subscriptions "
        "WHERE user_id = ? AND changed_at >= ? "
        f"AND (changed_at >= ? OR last_client_id {_distinct(conn)} ?) ORDER BY change_seq",
        (user_id, from_us, since_us, own_client),
    )
    return [(str(u), bool(s)) for u, s in rows]


async def moved_since(conn: Connection, user_id: int, since_us: int) -> list[str]:
    """The old URLs of the entities changed at or after `since_us` that an update
    moved away from (a client may still hold them under the old URL)."""
    rows = await conn.fetch_all(
        "SELECT a.old_url FROM subscription_url_aliases AS a "
        "JOIN subscriptions AS s ON s.id = a.subscription_id "
        "WHERE a.user_id = ? AND s.changed_at >= ? ORDER BY a.changed_seq",
        (user_id, since_us),
    )
    return [str(r[0]) for r in rows]
