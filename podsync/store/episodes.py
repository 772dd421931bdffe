"""Episode actions of the gpodder layer (gpodder spec 6.6): an append-only log whose
row id (`seq`) is the episode stream's cursor."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from podsync.model import episode_action_view
from podsync.store import Connection


@dataclass(slots=True)
class EpisodeAction:
    """One uploaded action as stored. Not frozen, for speed (a frozen dataclass sets
    each field through object.__setattr__, and an upload makes 30 of them); nothing
    changes one after parsing."""

    seq: int  # 0 until stored
    podcast_url: str
    podcast_key: str
    episode_url: str
    action: str
    occurred_at: int
    device_id: str | None
    guid: str | None
    started: int | None
    position: int | None
    total: int | None


_FIELDS = (
    "podcast_url, podcast_key, episode_url, action, occurred_at, device_id, guid, "
    "started, position, total"
)

# The columns episode_action_view is made of, in its order.
_VIEW_FIELDS = (
    "podcast_url, episode_url, action, occurred_at, device_id, guid, started, position, total"
)


async def insert_many(
    conn: Connection,
    user_id: int,
    actions: Sequence[tuple[EpisodeAction, bytes]],
    received_at: int,
) -> None:
    """Store (action, content hash) pairs, each with its view (what a pull sends); a
    hash the user already has is skipped, so a batch sent again after a lost answer
    adds nothing."""
    if conn.dialect == "postgresql":
        on_conflict = " ON CONFLICT (user_id, episode_url, action, content_hash) DO NOTHING"
        insert = "INSERT"
    else:
        insert, on_conflict = "INSERT OR IGNORE", ""
    await conn.execute_many(
        f"{insert} INTO episode_actions (user_id, {_FIELDS}, received_at, content_hash, view) "
        f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?){on_conflict}",
        [
            (
                user_id,
                a.podcast_url,
                a.podcast_key,
                a.episode_url,
                a.action,
                a.occurred_at,
                a.device_id,
                a.guid,
                a.started,
                a.position,
                a.total,
                received_at,
                digest,
                episode_action_view(
                    a.podcast_url,
                    a.episode_url,
                    a.action,
                    a.occurred_at,
                    a.device_id,
                    a.guid,
                    a.started,
                    a.position,
                    a.total,
                ),
            )
            for a, digest in actions
        ],
    )


async def max_seq(conn: Connection, user_id: int) -> int:
    row = await conn.fetch_one(
        "SELECT coalesce(max(seq), 0) FROM episode_actions WHERE user_id = ?", (user_id,)
    )
    return int(row[0])


async def page(
    conn: Connection,
    user_id: int,
    after_seq: int,
    upto_seq: int,
    podcast_key: str | None,
    device_id: str | None,
    aggregated: bool,
    limit: int,
) -> tuple[list[bytes], int]:
    """The views of the actions with seq in (after_seq, upto_seq], in seq order, and
    the seq of the last of them (0 when none); optionally only one podcast's or one
    device's; `aggregated` keeps the latest per (podcast, episode, action) by (client
    time, seq)."""
    where = "user_id = ? AND seq > ? AND seq <= ?"
    params: list[Any] = [user_id, after_seq, upto_seq]
    if podcast_key is not None:
        where += " AND podcast_key = ?"
        params.append(podcast_key)
    if device_id is not None:
        where += " AND device_id = ?"
        params.append(device_id)
    if aggregated:
        sql = (
            "SELECT seq, view FROM (SELECT seq, view, row_number() OVER ("
            "PARTITION BY podcast_key, episode_url, action "
            f"ORDER BY occurred_at DESC, seq DESC) AS rank FROM episode_actions WHERE {where}) "
            "AS ranked WHERE rank = 1 ORDER BY seq LIMIT ?"
        )
    else:
        sql = f"SELECT seq, view FROM episode_actions WHERE {where} ORDER BY seq LIMIT ?"
    rows = await conn.fetch_all(sql, [*params, limit])
    if not rows:
        return [], 0
    views = [r[1] for r in rows]
    if not all(views):
        views = await _with_missing_views(conn, rows)
    return views, int(rows[-1][0])


async def _with_missing_views(conn: Connection, rows: Sequence[Any]) -> list[bytes]:
    """The page's views, any empty one rendered from its row: a podsync older than the
    view column, still running beside a migrated one, stores actions without it."""
    out: list[bytes] = []
    for seq, view in rows:
        if not view:
            row = await conn.fetch_one(
                f"SELECT {_VIEW_FIELDS} FROM episode_actions WHERE seq = ?", (seq,)
            )
            view = episode_action_view(*row)
        out.append(bytes(view))
    return out


async def count_for_user(conn: Connection, user_id: int) -> int:
    row = await conn.fetch_one("SELECT count(*) FROM episode_actions WHERE user_id = ?", (user_id,))
    return int(row[0])
