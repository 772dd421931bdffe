"""SQLite's schema steps of the web UI's fourth release (25 on); `sqlite.py` runs
them after the earlier ones."""

from __future__ import annotations

import sqlite3

from podsync.storage.migrations.listening_totals import sqlite_step
from podsync.storage.migrations.sqlite_runner import Step, statements
from podsync.words import note_words

# 25: search over show notes whose cost follows the person's own podcasts (a scan of
# their feeds' items by the url key's index, not a full-text index over every feed:
# a prefix as short as "c" matched half the server's items before the person's were
# picked out), so the FTS5 index of step 22 and its triggers go. A person's queue
# (Up next) and their autoplay choice; the New episodes a person dismissed.
_LISTS = """
ALTER TABLE feed_episodes ADD COLUMN note_words TEXT NOT NULL DEFAULT '';  -- podsync.words
UPDATE feed_episodes SET note_words = podsync_note_words(notes) WHERE notes IS NOT NULL;
DROP TRIGGER feed_episodes_words_added;
DROP TRIGGER feed_episodes_words_removed;
DROP TRIGGER feed_episodes_words_changed;
DROP TABLE feed_episode_words;
ALTER TABLE feed_info ADD COLUMN description TEXT;  -- the feed's own, plain text
UPDATE feed_info SET etag = NULL, last_modified = NULL;
ALTER TABLE users ADD COLUMN autoplay INTEGER NOT NULL DEFAULT 1;
CREATE TABLE up_next (
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    podcast_key TEXT NOT NULL,                 -- the podcast's url key
    item_key    TEXT NOT NULL,                 -- 'g' || guid, else 'u' || enclosure URL
    ref         TEXT NOT NULL,                 -- the episode page's id when added
    place       INTEGER NOT NULL,              -- the order (smallest first)
    added_at    INTEGER NOT NULL,
    PRIMARY KEY (user_id, podcast_key, item_key)
) STRICT, WITHOUT ROWID;
CREATE INDEX up_next_order ON up_next(user_id, place);
CREATE TABLE inbox_dismissals (
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    podcast_key  TEXT NOT NULL,
    item_key     TEXT NOT NULL,                -- as up_next
    dismissed_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, podcast_key, item_key)
) STRICT, WITHOUT ROWID;
"""


def lists(conn: sqlite3.Connection) -> None:
    """25. The words of the show notes kept so far are made by podsync.words."""
    conn.create_function("podsync_note_words", 1, note_words, deterministic=True)
    for statement in statements(_LISTS):
        conn.execute(statement)


# 28: one index for the user's entities in creation order, subscribed or not, in
# place of two (all of them, and a partial one of the subscribed): a new entity
# wrote both. The filter on unsubscribed_at is read from the index, so a page or a
# count of the subscribed ones still reads no table row it does not return; it
# steps over the user's unsubscribed entries of the index instead of skipping them.
SUBSCRIPTION_INDEXES = """
DROP INDEX subscriptions_active;
DROP INDEX subscriptions_all;
CREATE INDEX subscriptions_user ON subscriptions(user_id, id, unsubscribed_at);
"""

# 29: nothing on SQLite. PostgreSQL's step 29 makes the guid's index lead with the
# guid for its planner's sake; SQLite picks the index with the most columns named,
# whatever their order.
NOTHING = "SELECT 1;"

# 30: how many episode actions each person has stored, kept by the writes that add
# and delete them (store/episodes.py, store/episode_actions.py), so that the Overview
# and the upload's bound read one row instead of counting the whole history.
EPISODE_ACTION_COUNT = """
ALTER TABLE users ADD COLUMN episode_action_count INTEGER NOT NULL DEFAULT 0;
UPDATE users SET episode_action_count =
    (SELECT count(*) FROM episode_actions a WHERE a.user_id = users.id);
"""

# 32: a new entity whose guid is the one derived from its own feed URL (every
# gpodder subscription, and an Open Podcast API subscribe that names no other guid)
# is not written to the guid's index: `guid_by_url` 1 marks it, and it is found by
# its url key instead. Rules that keep this exact (store/subscriptions.py):
# - a marked row's guid is always derive_guid(its feed_url), and so its url key is
#   the url key of every URL that derives that guid: a lookup by a guid derived from
#   a URL finds it by that URL's key (a user holds a url key once);
# - a write that changes a marked row's feed URL or guid unmarks it;
# - a batch that names a guid derived from none of its URLs first unmarks the
#   user's marked rows (`subscriptions.index_guids`), then looks the guid up.
# The guid's index took most of a subscription push's pages and a third of its CPU
# (docs/performance.md). The rows stored before stay in the index (NULL).
GUIDS_BY_URL = """
ALTER TABLE subscriptions ADD COLUMN guid_by_url INTEGER;
DROP INDEX subscriptions_guid;
CREATE INDEX subscriptions_guid ON subscriptions(user_id, guid) WHERE guid_by_url IS NULL;
CREATE INDEX subscriptions_by_url ON subscriptions(user_id) WHERE guid_by_url IS NOT NULL;
"""

STEPS_0_4: tuple[Step, ...] = (
    lists,  # 25
    # 26: statistics from running totals, and the web player's listening sessions
    # (listening_totals.py).
    sqlite_step,
)
