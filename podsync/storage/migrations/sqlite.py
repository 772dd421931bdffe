"""SQLite's schema steps and the runner that applies them (`PRAGMA user_version`)."""

from __future__ import annotations

import sqlite3

from podsync.storage.migrations.sqlite_backfills import episode_views, stored_views
from podsync.storage.migrations.sqlite_runner import Step, run
from podsync.storage.migrations.sqlite_steps_0_3 import FETCHES_AND_SIGN_INS, STEPS_0_3
from podsync.storage.migrations.sqlite_steps_0_4 import (
    EPISODE_ACTION_COUNT,
    GUIDS_BY_URL,
    NOTHING,
    STEPS_0_4,
    SUBSCRIPTION_INDEXES,
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
    stored_views,
    # 3: failed logins in the database, shared by processes and kept over restarts
    # (contract 3, rev. 2). Names as SHA-256 digests; times on the server's clock.
    """
    CREATE TABLE login_failures (
        id        INTEGER PRIMARY KEY,
        name_hash BLOB NOT NULL,
        address   TEXT NOT NULL,
        failed_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX login_failures_pair ON login_failures(name_hash, address, failed_at);
    CREATE INDEX login_failures_address ON login_failures(address, failed_at);
    CREATE INDEX login_failures_time ON login_failures(failed_at);
    """,
    # 4: usernames are unique ignoring case (rev. 2). Not a UNIQUE index: a database
    # of release 1 may already hold both `alice` and `Alice`; creating a user checks
    # inside its write transaction, and this index makes that check a seek.
    """
    CREATE INDEX users_name_nocase ON users(name COLLATE NOCASE);
    """,
    # 5: the gpodder v2 layer: devices, episode actions, URL aliases of subscriptions.
    """
    CREATE TABLE gpodder_devices (
        id           INTEGER PRIMARY KEY,      -- creation order, the device list's order
        user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        device_id    TEXT NOT NULL,            -- [A-Za-z0-9_.-]{1,64}, chosen by the client
        caption      TEXT NOT NULL,
        type         TEXT NOT NULL
            CHECK (type IN ('desktop', 'laptop', 'mobile', 'server', 'other')),
        created_at   INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL,
        UNIQUE (user_id, device_id)
    ) STRICT;

    CREATE TABLE episode_actions (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,  -- the episode stream's cursor
        user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        device_id    TEXT,
        podcast_url  TEXT NOT NULL,
        podcast_key  TEXT NOT NULL,            -- url key of podcast_url
        episode_url  TEXT NOT NULL,
        guid         TEXT,
        action       TEXT NOT NULL
            CHECK (action IN ('new', 'download', 'play', 'delete', 'flattr')),
        occurred_at  INTEGER NOT NULL,         -- the client's moment, else receipt time
        received_at  INTEGER NOT NULL,
        started      INTEGER,
        position     INTEGER,
        total        INTEGER,
        content_hash BLOB NOT NULL,            -- idempotent re-upload of a batch
        UNIQUE (user_id, content_hash)
    ) STRICT;
    CREATE INDEX episode_actions_user ON episode_actions(user_id, seq);
    CREATE INDEX episode_actions_podcast ON episode_actions(user_id, podcast_key, seq);
    CREATE INDEX episode_actions_episode ON episode_actions(user_id, episode_url, action);

    -- Every feed_url a subscription had before an OPA update moved it, so that a
    -- gpodder pull can say "remove old" next to "add new", and a gpodder remove of
    -- the old URL still finds the entity. A trigger keeps it whoever writes.
    CREATE TABLE subscription_url_aliases (
        subscription_id INTEGER NOT NULL REFERENCES subscriptions(id) ON DELETE CASCADE,
        user_id         INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        old_url         TEXT NOT NULL,
        changed_seq     INTEGER NOT NULL       -- the entity's change_seq of the move
    ) STRICT;
    CREATE INDEX subscription_url_aliases_user
        ON subscription_url_aliases(user_id, changed_seq);
    CREATE TRIGGER subscriptions_keep_old_url AFTER UPDATE OF feed_url ON subscriptions
    WHEN old.feed_url IS NOT new.feed_url
    BEGIN
        INSERT INTO subscription_url_aliases (subscription_id, user_id, old_url, changed_seq)
        VALUES (old.id, old.user_id, old.feed_url, new.change_seq);
    END;
    """,
    # 6: gpodder sessions ended by logout.json, shared by every process and kept over
    # restarts until the cookie would have expired (rev. 3); then maintenance deletes.
    """
    CREATE TABLE gpodder_revoked_sessions (
        session_id TEXT PRIMARY KEY,           -- the random id inside the cookie
        expires_at INTEGER NOT NULL            -- when no cookie of it can be valid
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX gpodder_revoked_sessions_expiry ON gpodder_revoked_sessions(expires_at);
    """,
    episode_views,  # 7
    # 8: what the opt-in feed fetcher learns of each distinct feed (shared by all its
    # subscribers) and its fetch state; the titles of the episodes feeds list; how far
    # the fetcher has read the change sequence for new feeds.
    """
    CREATE TABLE feed_info (
        url_key       TEXT PRIMARY KEY,        -- url key of the feed URL
        feed_url      TEXT NOT NULL,           -- the spelling fetched (first seen)
        title         TEXT,
        link          TEXT,                    -- the feed's website
        artwork_url   TEXT,
        etag          TEXT,                    -- for the next conditional GET
        last_modified TEXT,
        fetched_at    INTEGER,                 -- last fetch that succeeded
        checked_at    INTEGER,                 -- last fetch tried
        last_error    TEXT,                    -- why the last fetch failed, if it did
        failures      INTEGER NOT NULL DEFAULT 0,  -- failed fetches in a row
        next_try_at   INTEGER NOT NULL         -- due then (a claim moves it past the fetch)
    ) STRICT;
    CREATE INDEX feed_info_due ON feed_info(next_try_at);

    CREATE TABLE feed_episodes (
        url_key     TEXT NOT NULL REFERENCES feed_info(url_key) ON DELETE CASCADE,
        episode_url TEXT NOT NULL,             -- enclosure URL, '' when the item has none
        guid        TEXT NOT NULL,             -- as the feed writes it, '' when none
        title       TEXT NOT NULL
    ) STRICT;
    CREATE INDEX feed_episodes_url ON feed_episodes(url_key, episode_url);
    CREATE INDEX feed_episodes_guid ON feed_episodes(url_key, guid);

    CREATE TABLE feed_discovery (
        id  INTEGER PRIMARY KEY CHECK (id = 1),
        seq INTEGER NOT NULL                   -- subscriptions' change_seq read so far
    ) STRICT;
    INSERT INTO feed_discovery (id, seq) VALUES (1, 0);

    -- Is anyone still subscribed to this feed? (the fetcher asks before each fetch)
    CREATE INDEX subscriptions_feed ON subscriptions(url_key) WHERE unsubscribed_at IS NULL;
    """,
    # 9: the web UI: browser sessions (a row per signed-in browser, the SHA-256 of its
    # cookie's token, its CSRF token) and the admin flag of a user.
    """
    ALTER TABLE users ADD COLUMN admin INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE web_sessions (
        token_hash BLOB PRIMARY KEY,           -- SHA-256 of the cookie's token
        user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        csrf_token TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX web_sessions_user ON web_sessions(user_id);
    CREATE INDEX web_sessions_expiry ON web_sessions(expires_at);
    """,
    # 10: one b-tree both finds an episode's actions and refuses an action stored
    # before, instead of a second one on the content hash alone: a hash is a random
    # key, so each new action cost a leaf page of its own in that index. SQLite cannot
    # drop a UNIQUE constraint, so the table is copied; its AUTOINCREMENT counter is
    # carried over, so a seq of a deleted action is never given out again.
    """
    CREATE TABLE episode_actions_new (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,  -- the episode stream's cursor
        user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        device_id    TEXT,
        podcast_url  TEXT NOT NULL,
        podcast_key  TEXT NOT NULL,            -- url key of podcast_url
        episode_url  TEXT NOT NULL,
        guid         TEXT,
        action       TEXT NOT NULL
            CHECK (action IN ('new', 'download', 'play', 'delete', 'flattr')),
        occurred_at  INTEGER NOT NULL,         -- the client's moment, else receipt time
        received_at  INTEGER NOT NULL,
        started      INTEGER,
        position     INTEGER,
        total        INTEGER,
        content_hash BLOB NOT NULL,            -- idempotent re-upload of a batch
        view         BLOB NOT NULL DEFAULT x''  -- what a pull sends
    ) STRICT;
    INSERT INTO episode_actions_new (seq, user_id, device_id, podcast_url, podcast_key,
        episode_url, guid, action, occurred_at, received_at, started, position, total,
        content_hash, view)
    SELECT seq, user_id, device_id, podcast_url, podcast_key, episode_url, guid, action,
        occurred_at, received_at, started, position, total, content_hash, view
    FROM episode_actions ORDER BY seq;
    DELETE FROM sqlite_sequence WHERE name = 'episode_actions_new';
    INSERT INTO sqlite_sequence (name, seq)
        SELECT 'episode_actions_new', seq FROM sqlite_sequence WHERE name = 'episode_actions';
    DROP TABLE episode_actions;
    ALTER TABLE episode_actions_new RENAME TO episode_actions;
    -- The content hash covers the episode and the action, so this refuses exactly
    -- what UNIQUE (user_id, content_hash) refused.
    CREATE UNIQUE INDEX episode_actions_episode
        ON episode_actions(user_id, episode_url, action, content_hash);
    CREATE INDEX episode_actions_user ON episode_actions(user_id, seq);
    CREATE INDEX episode_actions_podcast ON episode_actions(user_id, podcast_key, seq);
    """,
    # 11: one b-tree on the url key instead of two. A url key is a random key, so each
    # new subscription cost a leaf page of log in each index on it; with the url key
    # first, the user's unique key also answers the feed fetcher's "is anyone still
    # subscribed to this feed?" (a feed has few subscribers: their rows are read).
    """
    DROP INDEX subscriptions_feed;
    DROP INDEX subscriptions_url_key;
    CREATE UNIQUE INDEX subscriptions_url_key ON subscriptions(url_key, user_id);
    """,
    # 12: app passwords, a user's named random credentials for one app each. Only the
    # SHA-256 of the secret is kept; the unique index on it finds the row a Basic
    # password names without reading any other. Ids are never given out twice
    # (AUTOINCREMENT), so `--revoke ID` never ends a newer password.
    """
    CREATE TABLE app_passwords (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        name         TEXT NOT NULL,
        hash         BLOB NOT NULL,             -- SHA-256 of the secret
        created_at   INTEGER NOT NULL,
        last_used_at INTEGER                    -- updated at most once a minute
    ) STRICT;
    CREATE UNIQUE INDEX app_passwords_name ON app_passwords(user_id, name);
    CREATE UNIQUE INDEX app_passwords_hash ON app_passwords(hash);
    """,
    # 13: Login Flow v2 requests of the Nextcloud API (any process answers any step),
    # and the episode actions by the server's clock of their arrival, which the
    # Nextcloud API's `since` (Unix seconds) reads.
    """
    CREATE TABLE login_flows (
        id         INTEGER PRIMARY KEY,
        flow_id    TEXT NOT NULL UNIQUE,        -- random, in the browser's URL
        token_hash BLOB NOT NULL UNIQUE,        -- SHA-256 of the app's poll token
        user_agent TEXT NOT NULL,
        address    TEXT NOT NULL,               -- who started it (the throttle)
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        state      TEXT NOT NULL
            CHECK (state IN ('pending', 'granted', 'cancelled', 'spent')),
        user_id    INTEGER REFERENCES users(id) ON DELETE CASCADE
    ) STRICT;
    CREATE INDEX login_flows_address ON login_flows(address, created_at);
    CREATE INDEX login_flows_expiry ON login_flows(expires_at);
    CREATE INDEX episode_actions_received ON episode_actions(user_id, received_at);
    """,
    # 14: the web UI's second release. The history
    # reads newest first by the action's own time (ties by arrival), a page at a time
    # from a (time, seq) key, for all podcasts or one (a podcast's page, the filter,
    # the "recently played" sort); an import's report waits in the session that made
    # it, for the page the browser is sent to after the upload.
    """
    CREATE INDEX episode_actions_time ON episode_actions(user_id, occurred_at, seq);
    CREATE INDEX episode_actions_podcast_time
        ON episode_actions(user_id, podcast_key, occurred_at, seq);
    ALTER TABLE web_sessions ADD COLUMN import_report TEXT;
    """,
    # 15: a podcast's page lists its feed's episodes newest first: each item's
    # publication time (pubDate, Atom published or updated) and its place in the feed
    # (a rank that falls down the feed, kept across fetches where the order allows,
    # so a new episode writes one row, not the whole feed). Rows stored before have
    # neither (listed last) until the next full fetch, which forgetting the
    # validators makes sure of.
    """
    ALTER TABLE feed_episodes ADD COLUMN published_at INTEGER;  -- microseconds, NULL: none
    ALTER TABLE feed_episodes ADD COLUMN feed_rank INTEGER;     -- larger: higher in the feed
    CREATE INDEX feed_episodes_newest
        ON feed_episodes(url_key, published_at DESC, feed_rank DESC);
    UPDATE feed_info SET etag = NULL, last_modified = NULL;
    """,
    *STEPS_0_3,  # 16 on
    # 23: who claimed a feed for a fetch (services/feeds/claims.py), so that a start
    # takes back at once the claims of a process that died mid-fetch.
    """
    ALTER TABLE feed_info ADD COLUMN claimed_by TEXT;
    CREATE INDEX feed_info_claimed ON feed_info(claimed_by) WHERE claimed_by IS NOT NULL;
    """,
    FETCHES_AND_SIGN_INS,  # 24: a person's fetches, where each name signed in
    *STEPS_0_4,  # 25 on
    # 27: the web UI's player (its fourth release): the speed a person listens to each
    # podcast at (percent, 80 to 300), and the episodes they removed from Continue
    # listening (kept by podsync alone: no episode action is written; a play that
    # happens after the removal shows the episode again); each feed item's chapters
    # (inline, or the address of their JSON), read anew at each feed's next fetch.
    """
    CREATE TABLE podcast_speeds (
        user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        podcast_key TEXT NOT NULL,             -- podsync.feeds.url_key of the podcast
        speed       INTEGER NOT NULL CHECK (speed BETWEEN 80 AND 300),  -- percent
        set_at      INTEGER NOT NULL,
        PRIMARY KEY (user_id, podcast_key)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE continue_removed (
        user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
        removed_at INTEGER NOT NULL,           -- plays that happened later show it again
        PRIMARY KEY (user_id, episode_id)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX continue_removed_episode ON continue_removed(episode_id);
    ALTER TABLE feed_episodes ADD COLUMN chapters TEXT;  -- services/feeds/chapters.py
    UPDATE feed_info SET etag = NULL, last_modified = NULL;
    """,
    SUBSCRIPTION_INDEXES,  # 28: sqlite_steps_0_4.py
    NOTHING,  # 29: PostgreSQL's guid index (sqlite_steps_0_4.py)
    EPISODE_ACTION_COUNT,  # 30: sqlite_steps_0_4.py
    NOTHING,  # 31: PostgreSQL's keys compare bytewise, as SQLite's always have
    GUIDS_BY_URL,  # 32: sqlite_steps_0_4.py
)


def migrate(raw: sqlite3.Connection) -> int:
    """Run the migrations this database lacks; return the resulting version."""
    return run(raw, MIGRATIONS)
