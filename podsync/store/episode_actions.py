"""Reading a user's episode actions (`episode_actions`, joined to their `episodes`):
the join's columns in one place (`ACTION_COLUMNS`, read as `ActionRow`s, and by the
web UI's history in `store.listening`); the pulls of the gpodder and Nextcloud APIs a
piece at a time in the user's seq order (each piece its own short read: a long
history is never in memory at once, and a slow client holds no read transaction
open); the counts the per-user bound takes; the one rule of "superseded" and the
hourly pruning it drives, in bounded windows of each user's seq.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from podsync.episode_keys import ACTION_CODES
from podsync.store import Connection
from podsync.store.value_lists import each_row, in_list

_CHUNK = 500

# The columns of an ActionRow, from `episode_actions a JOIN episodes e`.
ACTION_COLUMNS = (
    "a.seq, e.feed_id, e.url, e.prefixed, e.guid, a.action, a.occurred_at, a.device_id, "
    "a.started, a.position, a.total, a.guid, a.podcast_url"
)


class ActionRow(NamedTuple):
    seq: int
    feed_id: int
    episode_url: str  # as stored: without the feed's prefix when `prefixed`
    prefixed: int
    episode_guid: str | None
    action: int  # episode_keys.ACTION_NAMES
    occurred_at: int
    device_id: str | None
    started: int | None
    position: int | None
    total: int | None
    guid: str | None  # None: the episode's; "": none
    podcast_url: str | None  # None: the feed's spelling


# The join every read of actions names: each action with its episode.
ACTION_SOURCE = "episode_actions a JOIN episodes e ON e.id = a.episode_id"


def later_of_same(conn: Connection, scope: str = "") -> str:
    """The one rule of "superseded": a condition on an action `a`, true when a later
    action `b` of the same user, episode and kind exists (a later client time, or the
    same time and a higher seq), among those `scope` (conditions on `b`) admits. The
    aggregated pull passes its window and device; the pruning nothing. Looked up per
    action through the episode's actions, one index probe (SQLite would take the
    user's whole range; a LIMIT keeps PostgreSQL from joining the whole window).
    `b`'s user is checked as an expression (`+ 0`), which no index serves: as a
    column beside the window's seqs, PostgreSQL on a new instance's statistics took
    it through the primary key and filtered the user's every action for each action
    of the page (12 million rows read for a page of 1,000 at 12,000 actions)."""
    pinned = " INDEXED BY episode_actions_episode" if conn.dialect == "sqlite" else ""
    return (
        f"(SELECT 1 FROM episode_actions b{pinned} WHERE b.episode_id = a.episode_id"
        " AND b.occurred_at >= a.occurred_at AND b.action = a.action"
        " AND b.user_id + 0 = a.user_id"
        f"{scope} AND (b.occurred_at > a.occurred_at OR b.seq > a.seq) LIMIT 1) IS NOT NULL"
    )


def _rows(rows: list[Any]) -> list[ActionRow]:
    """The rows as the driver gives them (tuples; asyncpg's records): ActionRow's
    fields in its order, indexed and unpacked alike, without a copy each."""
    return rows


async def page(
    conn: Connection,
    user_id: int,
    *,
    window_after: int,
    after_seq: int,
    upto_seq: int,
    feed: int | None,
    device_id: str | None,
    aggregated: bool,
    limit: int,
) -> list[ActionRow]:
    """Up to `limit` actions with seq in (after_seq, upto_seq], in seq order;
    optionally only one podcast's or one device's. `aggregated` keeps the latest per
    episode and kind, by (client time, seq), among the actions (of that podcast or
    device) with seq in (window_after, upto_seq]: a page read in pieces passes its
    own start as `window_after` to every piece."""
    # A podcast's actions on PostgreSQL are each episode's, the user checked as an
    # expression that no index serves (as in `later_of_same`): left to choose,
    # PostgreSQL read the user's every action in the seq window for a podcast's few.
    by_episode = feed is not None and conn.dialect == "postgresql"
    user = "a.user_id + 0" if by_episode else "a.user_id"
    where = f"{user} = ? AND a.seq > ? AND a.seq <= ?"
    params: list[Any] = [user_id, after_seq, upto_seq]
    if device_id is not None:
        where += " AND a.device_id = ?"
        params.append(device_id)
    if aggregated:
        # A later action of the same episode and kind in the range: not the latest.
        scope = " AND b.seq > ? AND b.seq <= ?"
        if device_id is not None:
            scope += " AND b.device_id = ?"
        where += f" AND NOT ({later_of_same(conn, scope)})"
        params += [window_after, upto_seq] + ([device_id] if device_id is not None else [])
    if feed is None:
        source = ACTION_SOURCE
    elif by_episode:
        actions = f"SELECT * FROM episode_actions a WHERE a.episode_id = e.id AND {where}"
        source = f"episodes e {each_row(actions, 'a')}"
        where = "e.feed_id = ?"
        params.append(feed)
    else:
        # From the podcast's episodes (few), not through every action of the user.
        source = "episodes e CROSS JOIN episode_actions a INDEXED BY episode_actions_episode"
        where = f"e.feed_id = ? AND a.episode_id = e.id AND {where}"
        params.insert(0, feed)
    rows = await conn.fetch_all(
        f"SELECT {ACTION_COLUMNS} FROM {source} WHERE {where} ORDER BY a.seq LIMIT ?",
        [*params, limit],
    )
    return _rows(rows)


async def received_bounds(
    conn: Connection, user_id: int, from_s: int, since_s: int
) -> tuple[int | None, int | None]:
    """(the first seq received at or after `from_s`, the first received at or after
    `since_s`), None when there is none: every action received from then on has a seq
    at least that (the receipts name each second's first action)."""
    first = "SELECT min(first_seq) FROM episode_receipts WHERE user_id = ? AND received_s >= ?"
    row = await conn.fetch_one(f"SELECT ({first}), ({first})", (user_id, from_s, user_id, since_s))
    return (
        None if row[0] is None else int(row[0]),
        None if row[1] is None else int(row[1]),
    )


async def received_page(
    conn: Connection,
    user_id: int,
    after_seq: int,
    upto_seq: int,
    limit: int,
    before_since: tuple[int | None, str | None] | None = None,
) -> list[ActionRow]:
    """Up to `limit` actions with seq in (after_seq, upto_seq], in seq order. With
    `before_since` = (since_seq, device), those before `since_seq` (None: all) only
    when their device is not that one (None: only those with a device, as the
    release before did). The upper bound keeps PostgreSQL's plan on the key's
    range: open-ended, on a new instance's statistics it sorted the user's every
    action after `after_seq` for each piece (20,000, 19,000, ... rows for a pull of
    20,000 in pieces of 1,000)."""
    where = "a.user_id = ? AND a.seq > ? AND a.seq <= ?"
    params: list[Any] = [user_id, after_seq, upto_seq]
    if before_since is not None:
        since_seq, device_id = before_since
        distinct = "IS NOT" if conn.dialect == "sqlite" else "IS DISTINCT FROM"
        where += f" AND (a.seq >= ? OR a.device_id {distinct} ?)"
        params += [2**62 if since_seq is None else since_seq, device_id]
    rows = await conn.fetch_all(
        f"SELECT {ACTION_COLUMNS} FROM {ACTION_SOURCE} WHERE {where} ORDER BY a.seq LIMIT ?",
        [*params, limit],
    )
    return _rows(rows)


async def max_seq(conn: Connection, user_id: int) -> int:
    """The user's highest stored seq (0 when none): the episode stream's head."""
    row = await conn.fetch_one(
        "SELECT seq FROM episode_actions WHERE user_id = ? ORDER BY user_id DESC, seq DESC LIMIT 1",
        (user_id,),
    )
    return 0 if row is None else int(row[0])


async def count_for_user(conn: Connection, user_id: int) -> int:
    """How many actions the user has stored: the count the writes keep on the user's
    row (`episodes.store` adds, `delete` and `delete_play` take away), not a count of
    the history, which reads every action (8 ms at 200,000 on SQLite, 23 ms on
    PostgreSQL, `bench/overview_cost.py`). 0 for no user."""
    row = await conn.fetch_one("SELECT episode_action_count FROM users WHERE id = ?", (user_id,))
    return 0 if row is None else int(row[0])


async def _uncount(conn: Connection, user_id: int, removed: int) -> None:
    if removed:
        await conn.execute(
            "UPDATE users SET episode_action_count = episode_action_count - ? WHERE id = ?",
            (removed, user_id),
        )


async def user_ids(conn: Connection) -> list[int]:
    rows = await conn.fetch_all("SELECT id FROM users ORDER BY id")
    return [int(r[0]) for r in rows]


async def window_end(conn: Connection, user_id: int, after_seq: int, size: int) -> int | None:
    """The seq of the `size`-th of the user's actions after `after_seq` (or of the
    last one, when fewer follow); None when none follows."""
    row = await conn.fetch_one(
        "SELECT max(seq) FROM (SELECT seq FROM episode_actions WHERE user_id = ? AND seq > ? "
        "ORDER BY seq LIMIT ?) AS w",
        (user_id, after_seq, size),
    )
    return None if row is None or row[0] is None else int(row[0])


async def superseded_between(
    conn: Connection, user_id: int, after_seq: int, upto_seq: int, older_than: int
) -> list[int]:
    """The seqs in (after_seq, upto_seq] of the user's actions dated before
    `older_than` that a later action of the same episode and kind supersedes (later
    client time, or the same time and a higher seq): what the pruning deletes."""
    rows = await conn.fetch_all(
        "SELECT a.seq FROM episode_actions a WHERE a.user_id = ? AND a.seq > ? AND a.seq <= ? "
        f"AND a.occurred_at < ? AND {later_of_same(conn)}",
        (user_id, after_seq, upto_seq, older_than),
    )
    return [int(r[0]) for r in rows]


async def delete(conn: Connection, user_id: int, seqs: Sequence[int]) -> int:
    removed = 0
    for start in range(0, len(seqs), _CHUNK):
        chunk = seqs[start : start + _CHUNK]
        marks, bound = in_list(chunk, _CHUNK, dialect=conn.dialect)
        removed += await conn.execute(
            f"DELETE FROM episode_actions WHERE user_id = ? AND seq IN ({marks})",
            (user_id, *bound),
        )
    await _uncount(conn, user_id, removed)
    return removed


async def delete_play(
    conn: Connection, user_id: int, seq: int, episode_id: int, device_id: str
) -> int:
    """Delete the user's play at `seq` if it is a play of that episode and device (a
    listening session's earlier save); how many rows went (0 or 1)."""
    removed = await conn.execute(
        "DELETE FROM episode_actions WHERE user_id = ? AND seq = ? AND episode_id = ? "
        "AND action = ? AND device_id = ?",
        (user_id, seq, episode_id, ACTION_CODES["play"], device_id),
    )
    await _uncount(conn, user_id, removed)
    return removed
