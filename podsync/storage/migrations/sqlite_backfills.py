"""SQLite's schema steps that SQL alone cannot compute: they fill a new column from
the rows already stored (each runs inside its step's transaction)."""

from __future__ import annotations

import sqlite3

from podsync.model import Subscription, subscription_view
from podsync.storage.migrations.episode_views import episode_action_view


def stored_views(conn: sqlite3.Connection) -> None:
    """2: each subscription keeps its API JSON (`view`), each user a count of its
    entities (the per-user cap), each recorded action a fingerprint of what it was."""
    # BLOB: the bytes go into a response as they are, with no decoding and encoding.
    conn.execute("ALTER TABLE subscriptions ADD COLUMN view BLOB NOT NULL DEFAULT x''")
    conn.execute("ALTER TABLE users ADD COLUMN entity_count INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE actions ADD COLUMN fingerprint TEXT")
    conn.execute(
        "UPDATE users SET entity_count = "
        "(SELECT count(*) FROM subscriptions s WHERE s.user_id = users.id)"
    )
    rows = conn.execute(
        "SELECT id, user_id, sync_id, guid, feed_url, url_key, title, subscribed_at, "
        "unsubscribed_at, last_updated, last_client_id, change_seq, changed_at "
        "FROM subscriptions"
    )
    conn.executemany(
        "UPDATE subscriptions SET view = ? WHERE id = ?",
        ((subscription_view(Subscription(*row)), row[0]) for row in rows.fetchall()),
    )


BACKFILL_CHUNK = 5000


def episode_views(conn: sqlite3.Connection) -> None:
    """7: each episode action keeps its gpodder JSON (`view`), as subscriptions do."""
    conn.execute("ALTER TABLE episode_actions ADD COLUMN view BLOB NOT NULL DEFAULT x''")
    after = 0
    while True:  # in chunks of seq: a long history is never all in memory at once
        rows = conn.execute(
            "SELECT seq, podcast_url, episode_url, action, occurred_at, device_id, guid, "
            "started, position, total FROM episode_actions WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, BACKFILL_CHUNK),
        ).fetchall()
        if not rows:
            return
        conn.executemany(
            "UPDATE episode_actions SET view = ? WHERE seq = ?",
            [(episode_action_view(*row[1:]), row[0]) for row in rows],
        )
        after = rows[-1][0]
