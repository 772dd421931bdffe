"""SQLite's schema steps since the 0.2.0 release (16 on); `sqlite.py` runs them after
the earlier ones."""

from __future__ import annotations

import sqlite3

from podsync.storage.migrations.sqlite_per_user import per_user_numbers
from podsync.storage.migrations.sqlite_runner import Step, statements
from podsync.words import title_words

# 22: what an episode's page shows of its feed item, and the index that finds an
# episode by a word of its title.
_EPISODE_PAGES = """
ALTER TABLE feed_episodes ADD COLUMN duration INTEGER;     -- seconds (itunes:duration)
ALTER TABLE feed_episodes ADD COLUMN link TEXT;            -- the item's web page
ALTER TABLE feed_episodes ADD COLUMN media_type TEXT;      -- the enclosure's declared type
ALTER TABLE feed_episodes ADD COLUMN notes TEXT;           -- show notes, sanitized HTML
ALTER TABLE feed_episodes ADD COLUMN words TEXT NOT NULL DEFAULT '';  -- podsync.words
UPDATE feed_episodes SET words = podsync_title_words(title);
UPDATE feed_info SET etag = NULL, last_modified = NULL;
CREATE VIRTUAL TABLE feed_episode_words USING fts5(
    words, content = 'feed_episodes', content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 0'
);
CREATE TRIGGER feed_episodes_words_added AFTER INSERT ON feed_episodes BEGIN
    INSERT INTO feed_episode_words (rowid, words) VALUES (new.rowid, new.words);
END;
CREATE TRIGGER feed_episodes_words_removed AFTER DELETE ON feed_episodes BEGIN
    INSERT INTO feed_episode_words (feed_episode_words, rowid, words)
    VALUES ('delete', old.rowid, old.words);
END;
CREATE TRIGGER feed_episodes_words_changed AFTER UPDATE OF words ON feed_episodes BEGIN
    INSERT INTO feed_episode_words (feed_episode_words, rowid, words)
    VALUES ('delete', old.rowid, old.words);
    INSERT INTO feed_episode_words (rowid, words) VALUES (new.rowid, new.words);
END;
INSERT INTO feed_episode_words (feed_episode_words) VALUES ('rebuild');
"""


def episode_pages(conn: sqlite3.Connection) -> None:
    """22. The words of the titles kept so far are made by podsync.words, then
    indexed at once."""
    conn.create_function("podsync_title_words", 1, title_words, deterministic=True)
    for statement in statements(_EPISODE_PAGES):
        conn.execute(statement)


STEPS_0_3: tuple[Step, ...] = (
    # 16: a failed login is kept once per wrong password (contract rev. 5), so that a
    # device repeating an old password counts as one failure: a keyed hash of the
    # password (HMAC with the server's secret key, never the password nor a plain
    # hash of it), when it was first and last tried, how often, and of the last try
    # the door, what the client said it is and why it was refused (what a person
    # needs to tell which device keeps failing). Each failure kept before stays a
    # failure of its own (a key no HMAC gives), so a lockout in progress holds.
    # Login Flows by user: whatever ends a user's logins ends their granted flows.
    """
    ALTER TABLE login_failures ADD COLUMN password_key BLOB NOT NULL DEFAULT x'';
    ALTER TABLE login_failures ADD COLUMN first_at INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE login_failures ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE login_failures ADD COLUMN door TEXT NOT NULL DEFAULT '';
    ALTER TABLE login_failures ADD COLUMN client TEXT NOT NULL DEFAULT '';
    ALTER TABLE login_failures ADD COLUMN reason TEXT NOT NULL DEFAULT 'password';
    UPDATE login_failures SET password_key = CAST(CAST(id AS TEXT) AS BLOB), first_at = failed_at;
    DROP INDEX login_failures_pair;
    CREATE UNIQUE INDEX login_failures_key ON login_failures(name_hash, address, password_key);
    CREATE INDEX login_flows_user ON login_flows(user_id);
    """,
    # 17: the web UI's Subscribe form fetches a feed to check it, at most once a minute
    # per feed and a few times a minute per user, whichever process answers: a row per
    # address checked in the last minute (older rows go as new checks come), with who
    # asked and the answer, which another try within the minute gets without a fetch.
    """
    CREATE TABLE feed_checks (
        url_key    TEXT PRIMARY KEY,           -- url key of the address checked
        user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        checked_at INTEGER NOT NULL,
        answer     TEXT                        -- NULL while the fetch runs
            CHECK (answer IN ('feed', 'not_a_feed', 'unreachable')),
        reason     TEXT NOT NULL DEFAULT ''    -- why not a feed, or not reached
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX feed_checks_user ON feed_checks(user_id, checked_at);
    CREATE INDEX feed_checks_age ON feed_checks(checked_at);
    """,
    # 18: imports from another server (store/remote_imports.py), one row each: its
    # state, its report (JSON, bounded), the heartbeat of the process running it, how
    # far it read (a stopped import goes on from there), and a stop asked by a person.
    # The unique partial index is the lock: at most one running import per user.
    """
    CREATE TABLE remote_imports (
        id           INTEGER PRIMARY KEY,
        user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        origin       TEXT NOT NULL CHECK (origin IN ('web', 'cli')),
        server       TEXT NOT NULL,
        remote_user  TEXT NOT NULL,
        state        TEXT NOT NULL
            CHECK (state IN ('running', 'done', 'stopped', 'failed', 'refused')),
        started_at   INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL,
        finished_at  INTEGER,
        cancel       INTEGER NOT NULL DEFAULT 0,
        since        TEXT,
        report       TEXT
    ) STRICT;
    CREATE UNIQUE INDEX remote_imports_running ON remote_imports(user_id)
        WHERE state = 'running';
    CREATE INDEX remote_imports_user ON remote_imports(user_id, id);
    """,
    # 19: what each gpodder and Nextcloud reader of a stream was last served, so that
    # a write answered by one worker or process knows a read answered by another
    # (gpodder spec 4.4; the Nextcloud API's window): keyed by the user and a text
    # naming the session or device and the stream.
    """
    CREATE TABLE served_positions (
        user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        key        TEXT NOT NULL,
        position   INTEGER NOT NULL,           -- a gpodder cursor, or Unix seconds
        written_at INTEGER NOT NULL,           -- microseconds, server clock
        PRIMARY KEY (user_id, key)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX served_positions_written ON served_positions(written_at);
    """,
    # 20: change numbers and episode action numbers per user; episode actions kept
    # once per episode (sqlite_per_user.py says how and why).
    per_user_numbers,
    # 21: the web UI's third release.
    # Artwork kept by podsync, so that pages load it from podsync's own address: one
    # row per distinct image, by the SHA-256 of its bytes (its address, which never
    # changes), with the type its first bytes show; the index on the sizes gives the
    # store's total without reading an image. Each feed names its image, the URL it
    # came from, the image's validators for a conditional GET, and why the last try
    # failed. The feeds' validators are forgotten: the next fetch of each reads the
    # whole feed, and with it the artwork.
    # A person's own time zone (NULL: the server's ui.time_zone).
    # Sync health: the last refused attempt of each device and app password of a user
    # (when, from which address and client, why), and for a while the hashes of
    # revoked app passwords, so that a device still sending one is told "revoked",
    # not "wrong password".
    """
    CREATE TABLE artwork (
        id           INTEGER PRIMARY KEY,
        hash         TEXT NOT NULL UNIQUE,     -- SHA-256 of the bytes, hex
        content_type TEXT NOT NULL,            -- image/jpeg, png, gif or webp, from the bytes
        size         INTEGER NOT NULL,
        stored_at    INTEGER NOT NULL,
        bytes        BLOB NOT NULL
    ) STRICT;
    CREATE INDEX artwork_size ON artwork(size);
    ALTER TABLE feed_info ADD COLUMN artwork_hash TEXT;           -- the image kept, if any
    ALTER TABLE feed_info ADD COLUMN artwork_source TEXT;         -- the URL last fetched
    ALTER TABLE feed_info ADD COLUMN artwork_etag TEXT;
    ALTER TABLE feed_info ADD COLUMN artwork_last_modified TEXT;
    ALTER TABLE feed_info ADD COLUMN artwork_error TEXT;          -- why the last try failed
    ALTER TABLE feed_info ADD COLUMN artwork_checked_at INTEGER;  -- the last try
    CREATE INDEX feed_info_artwork ON feed_info(artwork_hash) WHERE artwork_hash IS NOT NULL;
    UPDATE feed_info SET etag = NULL, last_modified = NULL;

    ALTER TABLE users ADD COLUMN time_zone TEXT;

    CREATE TABLE sync_refusals (
        user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        kind       TEXT NOT NULL CHECK (kind IN ('device', 'app_password')),
        subject    TEXT NOT NULL,              -- the device id, or the app password's id
        refused_at INTEGER NOT NULL,
        address    TEXT NOT NULL,
        client     TEXT NOT NULL,              -- its User-Agent, cut short
        reason     TEXT NOT NULL
            CHECK (reason IN ('password', 'locked_out', 'revoked', 'disabled')),
        PRIMARY KEY (user_id, kind, subject)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE revoked_app_passwords (
        hash        BLOB PRIMARY KEY,          -- SHA-256 of the secret, as app_passwords
        user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        password_id INTEGER NOT NULL,          -- its id when it was in use
        name        TEXT NOT NULL,
        revoked_at  INTEGER NOT NULL
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX revoked_app_passwords_user ON revoked_app_passwords(user_id, revoked_at);
    """,
    # 22: a page per episode and a place to listen (the web UI's third release, its
    # second half). Each feed item keeps its duration, its web page, its enclosure's
    # type and its show notes (sanitized HTML, bounded: services/feeds/notes.py), and
    # the words of its title (podsync/words.py) with an FTS5 index over them, kept by
    # triggers, that finds an episode by a word of its title. The feeds' validators
    # are forgotten: the next fetch of each reads the whole feed, and its notes.
    episode_pages,
)

# Step 24 (after the feed claims of step 23): what one user may do to all. The
# fetches a person asked for besides the Subscribe form's checks (a Refresh; an
# address refused to their import form), for the bound on a person's fetches a
# minute; and where each name last signed in successfully (by the address's /64 for
# IPv6), so that past the bound on guesses at a name those addresses keep working.
FETCHES_AND_SIGN_INS = """
    CREATE TABLE user_fetches (
        user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        fetched_at INTEGER NOT NULL,
        kind       TEXT NOT NULL CHECK (kind IN ('refresh', 'refused'))
    ) STRICT;
    CREATE INDEX user_fetches_user ON user_fetches(user_id, fetched_at);
    CREATE INDEX user_fetches_age ON user_fetches(fetched_at);
    CREATE TABLE login_successes (
        name_hash    BLOB NOT NULL,            -- SHA-256 of the name, as login_failures
        address      TEXT NOT NULL,
        signed_in_at INTEGER NOT NULL,
        PRIMARY KEY (name_hash, address)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX login_successes_age ON login_successes(signed_in_at);
    """
