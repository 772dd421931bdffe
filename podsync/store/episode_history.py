"""How much episode history a user holds, and pruning what later actions superseded.

Beside `store.episodes` (the upload and pull of actions): counts for the per-user
bound, and the hourly pruning of superseded actions in bounded windows of seq.
"""

from __future__ import annotations

from collections.abc import Sequence

from podsync.store import Connection

_CHUNK = 500
_KEYS = 100  # actions looked up per statement (4 parameters each)

# What names one stored action: (episode URL, action, content hash).
ActionKey = tuple[str, str, bytes]


async def count_and_high(conn: Connection, user_id: int) -> tuple[int, int]:
    """(how many actions the user has stored, the highest seq among them)."""
    row = await conn.fetch_one(
        "SELECT count(*), coalesce(max(seq), 0) FROM episode_actions WHERE user_id = ?",
        (user_id,),
    )
    return int(row[0]), int(row[1])


async def count_after(conn: Connection, user_id: int, after_seq: int) -> tuple[int, int]:
    """(how many of the user's actions have a seq past `after_seq`, the highest)."""
    row = await conn.fetch_one(
        "SELECT count(*), coalesce(max(seq), 0) FROM episode_actions WHERE user_id = ? AND seq > ?",
        (user_id, after_seq),
    )
    return int(row[0]), int(row[1])


async def known_actions(conn: Connection, user_id: int, keys: Sequence[ActionKey]) -> int:
    """How many of these actions, each named by (episode URL, action, content hash),
    the user has stored already."""
    unique = sorted(set(keys))
    found = 0
    # Every term names the whole unique key, so each is one lookup in
    # episode_actions_episode (SQLite's multi-index OR; a bitmap OR on PostgreSQL).
    term = "(user_id = ? AND episode_url = ? AND action = ? AND content_hash = ?)"
    for start in range(0, len(unique), _KEYS):
        chunk = unique[start : start + _KEYS]
        row = await conn.fetch_one(
            f"SELECT count(*) FROM episode_actions WHERE {' OR '.join([term] * len(chunk))}",
            [value for key in chunk for value in (user_id, *key)],
        )
        found += int(row[0])
    return found


async def highest_seq(conn: Connection) -> int:
    row = await conn.fetch_one("SELECT coalesce(max(seq), 0) FROM episode_actions")
    return int(row[0])


async def superseded_between(
    conn: Connection, after_seq: int, upto_seq: int, older_than: int
) -> list[int]:
    """The seqs in (after_seq, upto_seq] of actions dated before `older_than` that a
    later action of the same user, podcast, episode and action supersedes (later
    client time, or the same time and a higher seq): what the pruning deletes."""
    rows = await conn.fetch_all(
        "SELECT a.seq FROM episode_actions a WHERE a.seq > ? AND a.seq <= ? "
        "AND a.occurred_at < ? AND EXISTS (SELECT 1 FROM episode_actions b "
        "WHERE b.user_id = a.user_id AND b.episode_url = a.episode_url "
        "AND b.action = a.action AND b.podcast_key = a.podcast_key "
        "AND (b.occurred_at > a.occurred_at OR (b.occurred_at = a.occurred_at AND b.seq > a.seq)))",
        (after_seq, upto_seq, older_than),
    )
    return [int(r[0]) for r in rows]


async def delete(conn: Connection, seqs: Sequence[int]) -> int:
    removed = 0
    for start in range(0, len(seqs), _CHUNK):
        chunk = seqs[start : start + _CHUNK]
        removed += await conn.execute(
            f"DELETE FROM episode_actions WHERE seq IN ({','.join('?' * len(chunk))})", chunk
        )
    return removed
