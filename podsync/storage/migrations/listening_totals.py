"""Schema step 26 (both engines): the statistics from running totals, and the web
player's listening sessions.

- `listened_episodes`: per person and episode, the merged stretches listened to
  (`podsync.stretches`), when it was first finished, and the web player's current
  listening session on it (its token and the seq of its one play action). None for
  an episode played once: its play says it.
- `listening_totals`: per person, quarter of an hour (UTC) and podcast, the seconds
  of new coverage the plays of that quarter added, and the episodes first finished.

Both are filled from the plays stored before, each user's in the order they happened
(client time, then seq), a chunk at a time; the write path keeps them from then on.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from podsync.episode_keys import ACTION_CODES
from podsync.storage.migrations.sqlite_runner import statements
from podsync.stretches import EpisodeListened, Totals, format_spans

if TYPE_CHECKING:  # a SQLite server never imports the PostgreSQL driver
    import asyncpg

CHUNK = 5000

SQLITE_TABLES = """
CREATE TABLE listened_episodes (
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    episode_id  INTEGER NOT NULL,           -- episodes.id
    spans       TEXT NOT NULL,              -- "start-end,..." seconds (podsync.stretches)
    finished_at INTEGER,                    -- the first play that reached the end
    session     TEXT,                       -- the web player's listening session
    session_seq INTEGER,                    -- and the seq of its play action
    PRIMARY KEY (user_id, episode_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE listening_totals (
    user_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    quarter  INTEGER NOT NULL,              -- occurred_at // 15 minutes
    feed_id  INTEGER NOT NULL,              -- episode_feeds.id
    seconds  INTEGER NOT NULL,              -- new coverage listened
    finished INTEGER NOT NULL,              -- episodes first finished
    PRIMARY KEY (user_id, quarter, feed_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX listening_totals_finished ON listening_totals(user_id, quarter, finished)
    WHERE finished > 0;
"""

POSTGRES_TABLES = """
CREATE TABLE listened_episodes (
    user_id     BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    episode_id  BIGINT NOT NULL,
    spans       TEXT NOT NULL,
    finished_at BIGINT,
    session     TEXT,
    session_seq BIGINT,
    PRIMARY KEY (user_id, episode_id)
);
CREATE TABLE listening_totals (
    user_id  BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    quarter  BIGINT NOT NULL,
    feed_id  BIGINT NOT NULL,
    seconds  BIGINT NOT NULL,
    finished BIGINT NOT NULL,
    PRIMARY KEY (user_id, quarter, feed_id)
);
CREATE INDEX listening_totals_finished ON listening_totals(user_id, quarter, finished)
    WHERE finished > 0;
"""

_PLAYS = (
    "SELECT a.occurred_at, a.seq, a.episode_id, e.feed_id, a.started, a.position, a.total "
    "FROM episode_actions a JOIN episodes e ON e.id = a.episode_id "
    "WHERE a.user_id = {0} AND a.action = {1} AND (a.occurred_at, a.seq) > ({2}, {3}) "
    "ORDER BY a.occurred_at, a.seq LIMIT {4}"
)
_EPISODES = "INSERT INTO listened_episodes (user_id, episode_id, spans, finished_at) VALUES ({0})"
_TOTALS = "INSERT INTO listening_totals (user_id, quarter, feed_id, seconds, finished) VALUES ({0})"


class UserFill:
    """One user's plays counted in order."""

    def __init__(self) -> None:
        self.listened: dict[int, EpisodeListened] = {}
        self.plays: Counter[int] = Counter()
        self.totals = Totals()
        self.after: tuple[int, int] = (-(2**62), 0)

    def count(self, rows: Iterable[Sequence[Any]]) -> None:
        for occurred_at, seq, episode_id, feed_id, started, position, total in rows:
            listened = self.listened.setdefault(int(episode_id), EpisodeListened())
            self.totals.play(listened, int(feed_id), int(occurred_at), started, position, total)
            self.plays[int(episode_id)] += 1
            self.after = (int(occurred_at), int(seq))

    def episode_rows(self, user_id: int) -> list[tuple[int, int, str, int | None]]:
        """The rows of the episodes played more than once that listened to anything:
        an episode played once has none (`store.listening_totals`)."""
        return [
            (user_id, episode_id, format_spans(e.spans), e.finished_at)
            for episode_id, e in self.listened.items()
            if (e.spans or e.finished_at is not None) and self.plays[episode_id] > 1
        ]

    def total_rows(self, user_id: int) -> list[tuple[int, int, int, int, int]]:
        return [
            (user_id, quarter, feed_id, seconds, finishes)
            for (quarter, feed_id), (seconds, finishes) in self.totals.added.items()
        ]


def sqlite_step(conn: sqlite3.Connection) -> None:
    """26 on SQLite."""
    for statement in statements(SQLITE_TABLES):
        conn.execute(statement)
    plays = _PLAYS.format("?", "?", "?", "?", "?")
    for (user_id,) in conn.execute("SELECT id FROM users ORDER BY id").fetchall():
        fill = UserFill()
        while True:
            rows = conn.execute(plays, (user_id, ACTION_CODES["play"], *fill.after, CHUNK))
            chunk = rows.fetchall()
            if not chunk:
                break
            fill.count(chunk)
        conn.executemany(_EPISODES.format("?, ?, ?, ?"), fill.episode_rows(user_id))
        conn.executemany(_TOTALS.format("?, ?, ?, ?, ?"), fill.total_rows(user_id))


async def postgres_step(conn: asyncpg.Connection) -> None:
    """26 on PostgreSQL: the same tables and fill as SQLite's."""
    await conn.execute(POSTGRES_TABLES)
    plays = _PLAYS.format("$1", "$2", "$3", "$4", "$5")
    for record in await conn.fetch("SELECT id FROM users ORDER BY id"):
        user_id = int(record[0])
        fill = UserFill()
        while True:
            chunk = await conn.fetch(plays, user_id, ACTION_CODES["play"], *fill.after, CHUNK)
            if not chunk:
                break
            fill.count(chunk)
        await conn.executemany(_EPISODES.format("$1, $2, $3, $4"), fill.episode_rows(user_id))
        await conn.executemany(_TOTALS.format("$1, $2, $3, $4, $5"), fill.total_rows(user_id))
