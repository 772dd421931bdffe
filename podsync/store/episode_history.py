"""How much episode history a user holds, and pruning what later actions superseded.

Beside `store.episodes` (the upload of actions) and `store.episode_reads` (their
pulls): counts for the per-user bound, and the hourly pruning of superseded actions
in bounded windows of each user's seq.
"""

from __future__ import annotations

from collections.abc import Sequence

from podsync.store import Connection

_CHUNK = 500


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


def later_of_same(conn: Connection, scope: str = "") -> str:
    """The one rule of "superseded": a condition on an action `a`, true when a later
    action `b` of the same user, episode and kind exists (a later client time, or the
    same time and a higher seq), among those `scope` (conditions on `b`) admits. The
    aggregated pull passes its window and device; the pruning nothing. Looked up per
    action through the episode's actions, one index probe (SQLite would take the
    user's whole range; a LIMIT keeps PostgreSQL from joining the whole window)."""
    pinned = " INDEXED BY episode_actions_episode" if conn.dialect == "sqlite" else ""
    return (
        f"(SELECT 1 FROM episode_actions b{pinned} WHERE b.episode_id = a.episode_id"
        " AND b.occurred_at >= a.occurred_at AND b.action = a.action AND b.user_id = a.user_id"
        f"{scope} AND (b.occurred_at > a.occurred_at OR b.seq > a.seq) LIMIT 1) IS NOT NULL"
    )


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
        marks = ",".join("?" * len(chunk))
        removed += await conn.execute(
            f"DELETE FROM episode_actions WHERE user_id = ? AND seq IN ({marks})",
            (user_id, *chunk),
        )
    return removed
