"""Ordered schema migrations. `PRAGMA user_version` records how many have run.

Append new steps; never edit a step that has shipped. Each step commits together
with its version bump, so a crash leaves the schema at a whole step.

Times are integer microseconds since the Unix epoch (UTC) unless noted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from podsync.model import Subscription, subscription_view

# A step is an SQL script, or a function for what SQL cannot compute (it runs inside
# the step's transaction).
Step = str | Callable[[sqlite3.Connection], None]


def _stored_views(conn: sqlite3.Connection) -> None:
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


MIGRATIONS: tuple[Step, ...] = (
    # 1: accounts, tokens, subscriptions, the action log.
    """
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT;
    -- change_seq: strictly increasing across the database, never reused.
    INSERT INTO meta (key, value) VALUES ('change_seq', '0');

    CREATE TABLE users (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused
        name             TEXT NOT NULL UNIQUE,
        password_hash    TEXT NOT NULL,
        enabled          INTEGER NOT NULL DEFAULT 1,
        token_generation INTEGER NOT NULL DEFAULT 0,
        created_at       INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE refresh_tokens (
        token_hash BLOB PRIMARY KEY,           -- SHA-256 of the token
        user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        expires_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX refresh_tokens_user ON refresh_tokens(user_id);

    CREATE TABLE subscriptions (
        id              INTEGER PRIMARY KEY,   -- creation order, the list keyset
        user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        sync_id         TEXT NOT NULL UNIQUE,
        guid            TEXT NOT NULL,
        feed_url        TEXT NOT NULL,
        url_key         TEXT NOT NULL,
        title           TEXT,                  -- kept from OPML import, used by export
        subscribed_at   INTEGER NOT NULL,
        unsubscribed_at INTEGER,
        last_updated    INTEGER NOT NULL,      -- occurred_at of the last applied action
        last_client_id  TEXT,                  -- Client-ID of the last writer
        change_seq      INTEGER NOT NULL UNIQUE,
        changed_at      INTEGER NOT NULL       -- server clock of the last change
    ) STRICT;
    CREATE UNIQUE INDEX subscriptions_url_key ON subscriptions(user_id, url_key);
    CREATE INDEX subscriptions_guid ON subscriptions(user_id, guid);
    CREATE INDEX subscriptions_active ON subscriptions(user_id, id)
        WHERE unsubscribed_at IS NULL;
    CREATE INDEX subscriptions_all ON subscriptions(user_id, id);
    CREATE INDEX subscriptions_changes ON subscriptions(user_id, change_seq);
    CREATE INDEX subscriptions_changed_at ON subscriptions(user_id, changed_at);

    CREATE TABLE actions (
        user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        action_id   TEXT NOT NULL,
        status      TEXT NOT NULL,             -- applied, ignored, rejected
        reason      TEXT,
        sync_id     TEXT,                      -- the entity the action concerned
        received_at INTEGER NOT NULL,
        PRIMARY KEY (user_id, action_id)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX actions_received ON actions(received_at);
    """,
    _stored_views,
)
