"""PostgreSQL's schema steps since the 0.2.0 release (16 on, the same versions as
SQLite's); `postgres.py` runs them after the earlier ones."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import asyncpg

# A step is a DDL script (statements separated by ";" at line ends) or an async
# function on the asyncpg connection, run in the step's transaction.
Step = str | Callable[[asyncpg.Connection], Awaitable[None]]

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
)
