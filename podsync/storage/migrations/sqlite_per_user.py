"""SQLite's step 19: numbers per user, and episode actions kept once per episode.

- Each user numbers their own changes and episode actions (`users.change_seq`,
  `users.episode_seq`): before, every writer of every user took the next number of
  one counter, which told each user how often the others wrote and made a poll at
  the head of a change feed answer anew whenever anyone wrote. Both counters start
  at the database's counter of the release before, so every cursor already issued
  stays valid. The feed fetcher reads each user's changes from its own position
  (`users.discovered_seq`; the partial index finds the users with changes unread).
- Episode actions: an episode's URL and guid are stored once per user and podcast
  (`episodes`, found by a hash of the URL, without the part the podcast's episodes
  share), the podcast once per user (`episode_feeds`); an action is a row of numbers
  keyed by (user, seq), with the guid or podcast spelling only when it differs from
  its episode's. The stored JSON of each action (`view`) is gone: a pull renders it.
  The server's clock of each upload is kept per second (`episode_receipts`, what the
  Nextcloud API's `since` reads), not per action.

The rows keep their seq, so every cursor of the episode stream stays valid.
"""

from __future__ import annotations

import sqlite3

from podsync.episode_keys import ACTION_NAMES, url_hash, url_prefix

_ACTION_CODE = (
    "CASE o.action "
    + " ".join(f"WHEN '{name}' THEN {code}" for code, name in enumerate(ACTION_NAMES))
    + " END"
)

SUBSCRIPTIONS = """
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
    change_seq      INTEGER NOT NULL,      -- the user's number of its last change
    changed_at      INTEGER NOT NULL,      -- server clock of the last change
    view            BLOB NOT NULL DEFAULT x''
) STRICT
"""

SUBSCRIPTION_INDEXES = """
CREATE UNIQUE INDEX subscriptions_url_key ON subscriptions(url_key, user_id);
CREATE INDEX subscriptions_guid ON subscriptions(user_id, guid);
CREATE INDEX subscriptions_active ON subscriptions(user_id, id) WHERE unsubscribed_at IS NULL;
CREATE INDEX subscriptions_all ON subscriptions(user_id, id);
CREATE UNIQUE INDEX subscriptions_changes ON subscriptions(user_id, change_seq);
CREATE INDEX subscriptions_changed_at ON subscriptions(user_id, changed_at);
CREATE TRIGGER subscriptions_keep_old_url AFTER UPDATE OF feed_url ON subscriptions
WHEN old.feed_url IS NOT new.feed_url
BEGIN
    INSERT INTO subscription_url_aliases (subscription_id, user_id, old_url, changed_seq)
    VALUES (old.id, old.user_id, old.feed_url, new.change_seq);
END;
"""

EPISODE_TABLES = """
CREATE TABLE episode_feeds (
    id       INTEGER PRIMARY KEY,
    user_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    url_key  TEXT NOT NULL,               -- the podcast's url key
    url      TEXT NOT NULL,               -- its spelling in the first action stored
    prefix   TEXT NOT NULL,               -- what its episodes' URLs begin with (kept once)
    last_at  INTEGER NOT NULL,            -- the latest occurred_at of its actions
    UNIQUE (user_id, url_key)
) STRICT;
CREATE TABLE episodes (
    id       INTEGER PRIMARY KEY,         -- stable: the episode's id for the web UI
    feed_id  INTEGER NOT NULL REFERENCES episode_feeds(id) ON DELETE CASCADE,
    url_hash INTEGER NOT NULL,            -- episode_keys.url_hash of the URL
    url      TEXT NOT NULL,               -- the URL, without the feed's prefix if `prefixed`
    prefixed INTEGER NOT NULL,
    guid     TEXT                         -- the guid of its first action
) STRICT;
CREATE TABLE episode_actions_16 (
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,         -- the user's episode stream position
    episode_id  INTEGER NOT NULL,         -- episodes.id (gone with the user, never alone)
    action      INTEGER NOT NULL,         -- episode_keys.ACTION_NAMES
    occurred_at INTEGER NOT NULL,         -- the client's moment, else receipt time
    device_id   TEXT,
    started     INTEGER,
    position    INTEGER,
    total       INTEGER,
    guid        TEXT,                     -- NULL: the episode's; '': none
    podcast_url TEXT,                     -- NULL: the feed's spelling
    PRIMARY KEY (user_id, seq)
) STRICT, WITHOUT ROWID;
CREATE TABLE episode_receipts (
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    received_s INTEGER NOT NULL,          -- a second of the server's clock
    first_seq  INTEGER NOT NULL,          -- the user's first action received in it
    PRIMARY KEY (user_id, received_s)
) STRICT, WITHOUT ROWID;
"""

EPISODE_INDEXES = """
CREATE INDEX episodes_url ON episodes(feed_id, url_hash);
CREATE INDEX episode_actions_episode ON episode_actions(episode_id, occurred_at);
CREATE INDEX episode_actions_time ON episode_actions(user_id, occurred_at);
"""

# The old rows, the first of each (user, podcast) and (user, podcast, episode) in seq
# order naming the spelling, prefix and guid kept.
_FILL = (
    "INSERT INTO episode_feeds (user_id, url_key, url, prefix, last_at) "
    "SELECT g.user_id, g.podcast_key, o.podcast_url, podsync_url_prefix(o.episode_url), g.last "
    "FROM (SELECT user_id, podcast_key, min(seq) AS first, max(occurred_at) AS last "
    "      FROM episode_actions GROUP BY user_id, podcast_key) AS g "
    "JOIN episode_actions o ON o.seq = g.first ORDER BY g.first",
    "INSERT INTO episodes (feed_id, url_hash, url, prefixed, guid) "
    "SELECT f.id, podsync_url_hash(o.episode_url), "
    "  CASE WHEN f.prefix <> '' AND substr(o.episode_url, 1, length(f.prefix)) = f.prefix "
    "  THEN substr(o.episode_url, length(f.prefix) + 1) ELSE o.episode_url END, "
    "  f.prefix <> '' AND substr(o.episode_url, 1, length(f.prefix)) = f.prefix, o.guid "
    "FROM (SELECT user_id, podcast_key, episode_url, min(seq) AS first "
    "      FROM episode_actions GROUP BY user_id, podcast_key, episode_url) AS g "
    "JOIN episode_actions o ON o.seq = g.first "
    "JOIN episode_feeds f ON f.user_id = g.user_id AND f.url_key = g.podcast_key "
    "ORDER BY g.first",
    "CREATE TEMP TABLE episode_ids AS SELECT e.id, f.user_id, f.url_key, "
    "  CASE WHEN e.prefixed THEN f.prefix || e.url ELSE e.url END AS episode_url, "
    "  e.guid, f.url AS podcast_url "
    "FROM episodes e JOIN episode_feeds f ON f.id = e.feed_id",
    "CREATE UNIQUE INDEX temp.episode_ids_key ON episode_ids(user_id, url_key, episode_url)",
    "INSERT INTO episode_actions_16 SELECT o.user_id, o.seq, e.id, "
    f"  {_ACTION_CODE}, o.occurred_at, o.device_id, o.started, o.position, o.total, "
    "  CASE WHEN o.guid IS e.guid THEN NULL WHEN o.guid IS NULL THEN '' ELSE o.guid END, "
    "  CASE WHEN o.podcast_url = e.podcast_url THEN NULL ELSE o.podcast_url END "
    "FROM episode_actions o JOIN episode_ids e "
    "  ON e.user_id = o.user_id AND e.url_key = o.podcast_key AND e.episode_url = o.episode_url "
    "ORDER BY o.user_id, o.seq",
    "INSERT INTO episode_receipts (user_id, received_s, first_seq) "
    "SELECT user_id, received_at / 1000000, min(seq) FROM episode_actions "
    "GROUP BY user_id, received_at / 1000000",
    "DROP TABLE temp.episode_ids",
)


def per_user_numbers(conn: sqlite3.Connection) -> None:
    """19. Runs with foreign keys off (the runner checks them before the COMMIT): the
    subscriptions table is copied without its global UNIQUE on change_seq, and
    dropping the old one must not cascade to the URL aliases that refer to it."""
    counter = int(conn.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()[0])
    issued = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'episode_actions'")
    row = issued.fetchone()
    discovered = int(conn.execute("SELECT seq FROM feed_discovery WHERE id = 1").fetchone()[0])
    for column in ("change_seq", "episode_seq", "discovered_seq"):
        conn.execute(f"ALTER TABLE users ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        "UPDATE users SET change_seq = ?, episode_seq = ?, discovered_seq = ?",
        (counter, int(row[0]) if row else 0, min(discovered, counter)),
    )
    conn.execute("CREATE INDEX users_undiscovered ON users(id) WHERE change_seq > discovered_seq")
    conn.execute("DROP TABLE feed_discovery")
    conn.execute("DELETE FROM meta WHERE key = 'change_seq'")
    conn.execute("INSERT INTO meta (key, value) VALUES ('health_probe', '')")
    _subscriptions(conn)
    _episodes(conn)


def _script(conn: sqlite3.Connection, script: str) -> None:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            conn.execute(buffer)
            buffer = ""
    if buffer.strip():
        conn.execute(buffer)


def _subscriptions(conn: sqlite3.Connection) -> None:
    """The 12-step way (sqlite.org/lang_altertable.html): a new table under another
    name, the rows, the old one dropped, the new one renamed to its name."""
    conn.execute(
        SUBSCRIPTIONS.replace("CREATE TABLE subscriptions", "CREATE TABLE subscriptions_16")
    )
    columns = (
        "id, user_id, sync_id, guid, feed_url, url_key, title, subscribed_at, unsubscribed_at, "
        "last_updated, last_client_id, change_seq, changed_at, view"
    )
    conn.execute(
        f"INSERT INTO subscriptions_16 ({columns}) SELECT {columns} FROM subscriptions ORDER BY id"
    )
    conn.execute("DROP TABLE subscriptions")
    conn.execute("ALTER TABLE subscriptions_16 RENAME TO subscriptions")
    _script(conn, SUBSCRIPTION_INDEXES)


def _episodes(conn: sqlite3.Connection) -> None:
    conn.create_function("podsync_url_hash", 1, url_hash, deterministic=True)
    conn.create_function("podsync_url_prefix", 1, url_prefix, deterministic=True)
    _script(conn, EPISODE_TABLES)
    for statement in _FILL:
        conn.execute(statement)
    conn.execute("DROP TABLE episode_actions")
    conn.execute("ALTER TABLE episode_actions_16 RENAME TO episode_actions")
    _script(conn, EPISODE_INDEXES)
