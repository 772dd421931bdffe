"""The web UI's reads of what a person listened to: the history newest first by the
action's own time (when it happened on the device, ties by arrival), paged by a
(time, seq) key; the latest plays for "Continue listening"; one podcast's actions;
and the devices that sent actions on one podcast.

The time is the client's `occurred_at`, not the arrival: a device that uploads a
backlog (a first sync, a tablet back online) must not put old plays on top. The
index `episode_actions_time (user_id, occurred_at, seq)` answers every page from
its key, however deep; one podcast's actions are read from its episodes (the index
`episode_actions_episode`) and sorted, a cost in proportion to that podcast's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.episode_keys import ACTION_CODES, ACTION_NAMES, full_url
from podsync.store import Connection
from podsync.store.episode_actions import ACTION_COLUMNS, ACTION_SOURCE

# A position in the history: (occurred_at, seq) of an action.
HistoryKey = tuple[int, int]
# Continue listening looks back this many plays at most (`latest_plays`).
RECENT_PLAYS = 1000


@dataclass(frozen=True, slots=True)
class HistoryRow:
    seq: int
    podcast_url: str
    podcast_title: str | None  # the subscription's title, when the user has one
    episode_url: str
    guid: str | None
    action: str
    occurred_at: int
    device_id: str | None
    position: int | None
    total: int | None
    episode_id: int = 0  # the episode's stable id (episodes.id), the same for all its actions
    started: int | None = None  # a play's start (where the stretch listened began)

    @property
    def key(self) -> HistoryKey:
        return (self.occurred_at, self.seq)


@dataclass(frozen=True, slots=True)
class HistoryFilter:
    podcast_key: str | None = None
    device_id: str | None = None
    action: str | None = None


# An action's columns (`store.episode_actions`, read as an ActionRow) and its podcast's
# spelling and prefix, the subscription's title and the episode's id after them.
HISTORY_COLUMNS = f"{ACTION_COLUMNS}, f.url, f.prefix, s.title, e.id"
HISTORY_JOINED = (
    "JOIN episode_feeds f ON f.id = e.feed_id "
    "LEFT JOIN subscriptions s ON s.user_id = a.user_id AND s.url_key = f.url_key "
)


def history_row(r: Any) -> HistoryRow:
    (seq, _, url, prefixed, episode_guid, action, occurred_at, device_id, started, position,
     total, guid, podcast_url, feed_url, prefix, title, episode_id) = r  # fmt: skip
    return HistoryRow(
        int(seq),
        str(feed_url if podcast_url is None else podcast_url),
        None if title is None else str(title),
        full_url(str(url), prefixed, str(prefix)),
        episode_guid if guid is None else (guid or None),
        ACTION_NAMES[action],
        int(occurred_at),
        None if device_id is None else str(device_id),
        None if position is None else int(position),
        None if total is None else int(total),
        int(episode_id),
        None if started is None else int(started),
    )


def _where(conn: Connection, user_id: int, only: HistoryFilter) -> tuple[str, str, list[Any]]:
    """(the tables, the conditions, their parameters) of the filtered actions."""
    source = f"{ACTION_SOURCE} "
    where = "a.user_id = ?"
    params: list[Any] = [user_id]
    if only.podcast_key is not None:
        # From the podcast's episodes: CROSS JOIN keeps SQLite to that order, and the
        # index to each episode's actions (not the range of all the user's).
        source = "episode_feeds pf CROSS JOIN episodes e CROSS JOIN episode_actions a "
        if conn.dialect == "sqlite":
            source += "INDEXED BY episode_actions_episode "
        where = "pf.user_id = ? AND pf.url_key = ? AND e.feed_id = pf.id AND a.episode_id = e.id"
        where += " AND a.user_id = ?"
        params = [user_id, only.podcast_key, user_id]
    if only.device_id is not None:
        where += " AND a.device_id = ?"
        params.append(only.device_id)
    if only.action is not None:
        where += " AND a.action = ?"
        params.append(ACTION_CODES.get(only.action, -1))
    return source, where, params


async def history_page(
    conn: Connection,
    user_id: int,
    only: HistoryFilter,
    before: HistoryKey | None,
    after: HistoryKey | None,
    limit: int,
) -> list[HistoryRow]:
    """Up to `limit` actions newest first by their own time, older than `before` or,
    for the page before, newer than `after` (then read oldest first and reversed)."""
    source, where, params = _where(conn, user_id, only)
    if after is not None:
        where += " AND (a.occurred_at, a.seq) > (?, ?)"
        params += list(after)
        order = "ASC"
    else:
        if before is not None:
            where += " AND (a.occurred_at, a.seq) < (?, ?)"
            params += list(before)
        order = "DESC"
    rows = await conn.fetch_all(
        f"SELECT {HISTORY_COLUMNS} FROM {source}{HISTORY_JOINED}WHERE {where} "
        f"ORDER BY a.occurred_at {order}, a.seq {order} LIMIT ?",
        [*params, limit],
    )
    found = [history_row(r) for r in rows]
    return found if order == "DESC" else found[::-1]


async def history_exists(
    conn: Connection, user_id: int, only: HistoryFilter, key: HistoryKey, newer: bool
) -> bool:
    """Whether an action past `key` (newer or older) matches the filter. From the
    actions alone unless the filter names a podcast: every action has its episode
    (episodes go only with their user), and a generic plan that joined them read the
    whole index of the episodes for one row (on PostgreSQL, after an ANALYZE)."""
    source, where, params = _where(conn, user_id, only)
    if only.podcast_key is None:
        source = "episode_actions a "
    where += f" AND (a.occurred_at, a.seq) {'>' if newer else '<'} (?, ?)"
    row = await conn.fetch_one(f"SELECT 1 FROM {source}WHERE {where} LIMIT 1", [*params, *key])
    return row is not None


async def latest_plays(
    conn: Connection, user_id: int, before: HistoryKey | None, limit: int
) -> list[HistoryRow]:
    """The user's play actions newest first by their own time, a chunk at a time
    (Continue listening reads chunks until it has found enough episodes), among their
    latest RECENT_PLAYS plays only: a chunk that reaches past those is cut short,
    which ends the reading. So the Overview costs the same for a history of 500,000
    plays as for one of 1,000 (it read up to 5,000 plays a request, 86 ms, before)."""
    oldest = await conn.fetch_one(
        "SELECT occurred_at, seq FROM episode_actions WHERE user_id = ? AND action = ? "
        "ORDER BY occurred_at DESC, seq DESC LIMIT 1 OFFSET ?",
        (user_id, ACTION_CODES["play"], RECENT_PLAYS - 1),
    )
    rows = await history_page(conn, user_id, HistoryFilter(action="play"), before, None, limit)
    if oldest is None:  # fewer plays than that: all of them are recent
        return rows
    edge = (int(oldest[0]), int(oldest[1]))
    return [row for row in rows if row.key >= edge]


async def podcast_actions(
    conn: Connection, user_id: int, podcast_key: str, limit: int
) -> list[HistoryRow]:
    """The user's latest `limit` actions on one podcast, newest first by their time."""
    return await history_page(
        conn, user_id, HistoryFilter(podcast_key=podcast_key), None, None, limit
    )


async def podcast_devices(conn: Connection, user_id: int, podcast_key: str) -> list[str]:
    """The devices that sent actions on one podcast."""
    pinned = " INDEXED BY episode_actions_episode" if conn.dialect == "sqlite" else ""
    rows = await conn.fetch_all(
        "SELECT DISTINCT a.device_id FROM episode_feeds f CROSS JOIN episodes e "
        f"CROSS JOIN episode_actions a{pinned} "
        "WHERE f.user_id = ? AND f.url_key = ? AND e.feed_id = f.id AND a.episode_id = e.id "
        "AND a.device_id IS NOT NULL",
        (user_id, podcast_key),
    )
    return sorted(str(r[0]) for r in rows)
