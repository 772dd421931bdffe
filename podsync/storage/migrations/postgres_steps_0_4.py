"""PostgreSQL's schema steps of the web UI's fourth release (25 on, the same versions
as SQLite's); `postgres.py` runs them after the earlier ones."""

from __future__ import annotations

import asyncpg

from podsync.storage.migrations.listening_totals import postgres_step
from podsync.storage.migrations.postgres_steps_0_3 import Step
from podsync.words import note_words

_LISTS = """
ALTER TABLE feed_episodes ADD COLUMN note_words TEXT NOT NULL DEFAULT '';
DROP INDEX feed_episodes_words;
ALTER TABLE feed_info ADD COLUMN description TEXT;
UPDATE feed_info SET etag = NULL, last_modified = NULL;
ALTER TABLE users ADD COLUMN autoplay INTEGER NOT NULL DEFAULT 1;
CREATE TABLE up_next (
    user_id     BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    podcast_key TEXT NOT NULL,
    item_key    TEXT NOT NULL,
    ref         TEXT NOT NULL,
    place       BIGINT NOT NULL,
    added_at    BIGINT NOT NULL,
    PRIMARY KEY (user_id, podcast_key, item_key)
);
CREATE INDEX up_next_order ON up_next(user_id, place);
CREATE TABLE inbox_dismissals (
    user_id      BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    podcast_key  TEXT NOT NULL,
    item_key     TEXT NOT NULL,
    dismissed_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, podcast_key, item_key)
);
"""
_CHUNK = 5000
_SET_WORDS = "UPDATE feed_episodes SET note_words = $2 WHERE ctid = $1::tid"


async def _lists(conn: asyncpg.Connection) -> None:
    """25 (as SQLite's step 25): search over show notes by a scan of the person's own
    feeds (the GIN index of step 22 goes), the queue, the inbox's dismissals."""
    await conn.execute(_LISTS)
    rows = conn.cursor(
        "SELECT ctid, notes FROM feed_episodes WHERE notes IS NOT NULL", prefetch=_CHUNK
    )
    chunk: list[tuple[object, str]] = []
    async for ctid, notes in rows:
        chunk.append((ctid, note_words(notes)))
        if len(chunk) == _CHUNK:
            await conn.executemany(_SET_WORDS, chunk)
            chunk = []
    if chunk:
        await conn.executemany(_SET_WORDS, chunk)


# 28: one index for the user's entities in creation order in place of two (as
# SQLite's step 28).
SUBSCRIPTION_INDEXES = """
DROP INDEX subscriptions_active;
DROP INDEX subscriptions_all;
CREATE INDEX subscriptions_user ON subscriptions(user_id, id, unsubscribed_at);
"""

# 29: the guid's index leads with the guid, so that the sync batch's read can name
# it alone (sync_batch._matching): led by user_id it was one of five indexes on the
# user, among which a plan made on an empty table could not tell. The lookups it
# serves name both columns (SQLite's step 29 changes nothing).
GUID_INDEX = """
DROP INDEX subscriptions_guid;
CREATE INDEX subscriptions_guid ON subscriptions(guid, user_id);
"""

# 30: how many episode actions each person has stored (as SQLite's step 30).
EPISODE_ACTION_COUNT = """
ALTER TABLE users ADD COLUMN episode_action_count BIGINT NOT NULL DEFAULT 0;
UPDATE users SET episode_action_count =
    (SELECT count(*) FROM episode_actions a WHERE a.user_id = users.id);
"""

# 31: every text column an index keys on compares bytewise (`COLLATE "C"`), as on
# SQLite and whatever the database's own collation: under a language's rules
# (`en_US.UTF-8`, the `postgres` image's default) each lookup and insert of a key
# (URL keys, guids, sync and action ids) compares by those rules, a quarter of
# PostgreSQL's CPU a sync batch (docs/performance.md). Equality is the same either
# way (a deterministic collation's equality is byte equality); what changes is the
# indexes' order, and so every index on these columns is rebuilt here (the tables'
# rows stay as they are). Columns compared with one another change together, or a
# join would compare under "C" and pass by the other column's index. users.name
# stays: its index folds case by the database's rules (lower(name)).
BYTEWISE_COLUMNS: dict[str, tuple[str, ...]] = {
    "actions": ("action_id",),
    "app_passwords": ("name",),
    "artwork": ("hash",),
    "episode_feeds": ("url_key",),
    "feed_info": ("url_key", "artwork_hash", "claimed_by"),
    "feed_checks": ("url_key",),
    "feed_episodes": ("url_key", "guid", "episode_url"),
    "gpodder_devices": ("device_id",),
    "gpodder_revoked_sessions": ("session_id",),
    "inbox_dismissals": ("podcast_key", "item_key"),
    "login_failures": ("address",),
    "login_flows": ("address", "flow_id"),
    "login_successes": ("address",),
    "meta": ("key",),
    "podcast_speeds": ("podcast_key",),
    "served_positions": ("key",),
    "subscriptions": ("url_key", "guid", "sync_id"),
    "sync_refusals": ("kind", "subject"),
    "up_next": ("podcast_key", "item_key"),
}
BYTEWISE_KEYS = "".join(
    f"ALTER TABLE {table} "
    + ", ".join(f'ALTER COLUMN {column} TYPE TEXT COLLATE "C"' for column in columns)
    + ";\n"
    for table, columns in BYTEWISE_COLUMNS.items()
)

# 32: the column of SQLite's step 32, so that a database copied between the engines
# keeps it. PostgreSQL's guid index holds every row (its lookups do not read the
# column): an index entry costs a PostgreSQL batch little of its CPU.
GUIDS_BY_URL = """
ALTER TABLE subscriptions ADD COLUMN guid_by_url SMALLINT;
"""

STEPS_0_4: tuple[Step, ...] = (
    _lists,  # 25
    # 26: statistics from running totals, and the web player's listening sessions
    # (listening_totals.py).
    postgres_step,
)
