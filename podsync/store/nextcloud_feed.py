"""The reads of the Nextcloud gpoddersync API: what changed since a moment of the
server's clock (its `since` is Unix seconds, not a cursor). Subscriptions by their
`changed_at`, episode actions by their `received_at`: the server's own clock of
each change, never a client's."""

from __future__ import annotations

from podsync.store import Connection


async def changed_since(conn: Connection, user_id: int, since_us: int) -> list[tuple[str, bool]]:
    """(feed_url, subscribed) of the entities changed at or after `since_us`, each once
    in its final state (the index on (user_id, changed_at))."""
    rows = await conn.fetch_all(
        "SELECT feed_url, unsubscribed_at IS NULL FROM subscriptions "
        "WHERE user_id = ? AND changed_at >= ? ORDER BY change_seq",
        (user_id, since_us),
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


async def actions_since(conn: Connection, user_id: int, since_us: int) -> list[bytes]:
    """The stored views of the episode actions received at or after `since_us`, in the
    order they were stored (the index on (user_id, received_at))."""
    rows = await conn.fetch_all(
        "SELECT view FROM episode_actions WHERE user_id = ? AND received_at >= ? ORDER BY seq",
        (user_id, since_us),
    )
    return [bytes(r[0]) for r in rows]


async def all_actions(conn: Connection, user_id: int) -> list[bytes]:
    """Every stored action's view of the user (a first sync), in the order stored."""
    rows = await conn.fetch_all(
        "SELECT view FROM episode_actions WHERE user_id = ? ORDER BY seq", (user_id,)
    )
    return [bytes(r[0]) for r in rows]
