"""PostgreSQL's schema steps since the 0.2.0 release (16 on, the same versions as
SQLite's); `postgres.py` runs them after the earlier ones."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import asyncpg

# A step is a DDL script (statements separated by ";" at line ends) or an async
# function on the asyncpg connection, run in the step's transaction.
Step = str | Callable[[asyncpg.Connection], Awaitable[None]]

_TABLES_18 = """
CREATE TABLE artwork (
    id           BIGSERIAL PRIMARY KEY,
    hash         TEXT NOT NULL UNIQUE,
    content_type TEXT NOT NULL,
    size         BIGINT NOT NULL,
    stored_at    BIGINT NOT NULL,
    bytes        BYTEA NOT NULL
);
CREATE INDEX artwork_size ON artwork(size);
ALTER TABLE feed_info ADD COLUMN artwork_hash TEXT;
ALTER TABLE feed_info ADD COLUMN artwork_source TEXT;
ALTER TABLE feed_info ADD COLUMN artwork_etag TEXT;
ALTER TABLE feed_info ADD COLUMN artwork_last_modified TEXT;
ALTER TABLE feed_info ADD COLUMN artwork_error TEXT;
ALTER TABLE feed_info ADD COLUMN artwork_checked_at BIGINT;
CREATE INDEX feed_info_artwork ON feed_info(artwork_hash) WHERE artwork_hash IS NOT NULL;
UPDATE feed_info SET etag = NULL, last_modified = NULL;

ALTER TABLE users ADD COLUMN time_zone TEXT;

CREATE TABLE sync_refusals (
    user_id    BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('device', 'app_password')),
    subject    TEXT NOT NULL,
    refused_at BIGINT NOT NULL,
    address    TEXT NOT NULL,
    client     TEXT NOT NULL,
    reason     TEXT NOT NULL CHECK (reason IN ('password', 'locked_out', 'revoked', 'disabled')),
    PRIMARY KEY (user_id, kind, subject)
);
CREATE TABLE revoked_app_passwords (
    hash        BYTEA PRIMARY KEY,
    user_id     BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    password_id BIGINT NOT NULL,
    name        TEXT NOT NULL,
    revoked_at  BIGINT NOT NULL
);
CREATE INDEX revoked_app_passwords_user ON revoked_app_passwords(user_id, revoked_at);
"""
# podsync/sorting.py's sort_key in SQL: decompose, drop the combining marks,
# lower-case, drop a leading article. normalize() needs a UTF8 database; on another
# encoding (which holds no accented letters to decompose) the marks step is all.
_SORT_KEY = r"""
CREATE FUNCTION podsync_sort_key(title text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT regexp_replace(
    lower(regexp_replace({decomposed}, '[\u0300-\u036f]', '', 'g')),
    '^(the|an|a)\s+(?=\S)', '')
$$;
"""


async def _step_18(conn: asyncpg.Connection) -> None:
    """The web UI's third release (as SQLite's step 18), and the sort key function."""
    await conn.execute(_TABLES_18)
    utf8 = await conn.fetchval("SHOW server_encoding") == "UTF8"
    decomposed = "normalize(title, NFD)" if utf8 else "title"
    await conn.execute(_SORT_KEY.format(decomposed=decomposed))


STEPS_0_3: tuple[Step, ...] = (
    # 16: a failed login kept once per wrong password, by a keyed hash of it; Login
    # Flows by user (as SQLite's step 16).
    """
    ALTER TABLE login_failures ADD COLUMN password_key BYTEA NOT NULL DEFAULT '';
    ALTER TABLE login_failures ADD COLUMN first_at BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE login_failures ADD COLUMN attempts BIGINT NOT NULL DEFAULT 1;
    ALTER TABLE login_failures ADD COLUMN door TEXT NOT NULL DEFAULT '';
    ALTER TABLE login_failures ADD COLUMN client TEXT NOT NULL DEFAULT '';
    ALTER TABLE login_failures ADD COLUMN reason TEXT NOT NULL DEFAULT 'password';
    UPDATE login_failures SET password_key = convert_to(id::text, 'UTF8'), first_at = failed_at;
    DROP INDEX login_failures_pair;
    CREATE UNIQUE INDEX login_failures_key ON login_failures(name_hash, address, password_key);
    CREATE INDEX login_flows_user ON login_flows(user_id);
    """,
    # 17: the Subscribe form's checks of the last minute (as SQLite's step 17).
    """
    CREATE TABLE feed_checks (
        url_key    TEXT PRIMARY KEY,
        user_id    BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        checked_at BIGINT NOT NULL,
        answer     TEXT CHECK (answer IN ('feed', 'not_a_feed', 'unreachable')),
        reason     TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX feed_checks_user ON feed_checks(user_id, checked_at);
    CREATE INDEX feed_checks_age ON feed_checks(checked_at);
    """,
    _step_18,
)
