"""A person's Up next queue (table `up_next`): episodes in the order they are to be
played, kept by podsync alone (no app API carries a queue), and their autoplay
choice (`users.autoplay`).

An entry is one feed item of one podcast: `item_key` is "g" and its guid, else
"u" and its enclosure URL, so that a page's id of the episode (which changes once
something is done with it) finds the same entry. `ref` is the id it was added by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.store import Connection


@dataclass(frozen=True, slots=True)
class Queued:
    podcast_key: str
    item_key: str
    ref: str
    place: int

    @property
    def key(self) -> tuple[str, str]:
        return self.podcast_key, self.item_key


def _queued(row: Any) -> Queued:
    return Queued(str(row[0]), str(row[1]), str(row[2]), int(row[3]))


async def entries(conn: Connection, user_id: int) -> list[Queued]:
    """The queue, first to be played first."""
    rows = await conn.fetch_all(
        "SELECT podcast_key, item_key, ref, place FROM up_next WHERE user_id = ? "
        "ORDER BY place, added_at",
        (user_id,),
    )
    return [_queued(r) for r in rows]


async def count(conn: Connection, user_id: int) -> int:
    row = await conn.fetch_one("SELECT count(*) FROM up_next WHERE user_id = ?", (user_id,))
    return 0 if row is None else int(row[0])


async def add(
    conn: Connection, user_id: int, key: tuple[str, str], ref: str, now: int, first: bool
) -> bool:
    """Queue an episode last (or first); False when it is queued already. Call in a
    write."""
    row = await conn.fetch_one(
        "SELECT min(place), max(place) FROM up_next WHERE user_id = ?", (user_id,)
    )
    low, high = (row[0], row[1]) if row is not None else (None, None)
    place = (
        (int(low) - 1 if low is not None else 0)
        if first
        else (int(high) + 1 if high is not None else 0)
    )
    added = await conn.execute(
        "INSERT INTO up_next (user_id, podcast_key, item_key, ref, place, added_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (user_id, podcast_key, item_key) DO NOTHING",
        (user_id, key[0], key[1], ref, place, now),
    )
    return bool(added)


async def remove(conn: Connection, user_id: int, key: tuple[str, str]) -> bool:
    """Take an episode off the queue. Call in a write."""
    gone = await conn.execute(
        "DELETE FROM up_next WHERE user_id = ? AND podcast_key = ? AND item_key = ?",
        (user_id, key[0], key[1]),
    )
    return bool(gone)


async def remove_ref(conn: Connection, user_id: int, ref: str) -> bool:
    """Take off the entry added by this id (one whose episode is no longer the
    person's, so that its key cannot be made again). Call in a write."""
    gone = await conn.execute("DELETE FROM up_next WHERE user_id = ? AND ref = ?", (user_id, ref))
    return bool(gone)


async def reorder(conn: Connection, user_id: int, order: list[tuple[str, str]]) -> None:
    """Number the queue's entries in this order (every entry, as `entries` read them
    in the same write, moved as the person asked). Call in a write."""
    await conn.execute_many(
        "UPDATE up_next SET place = ? WHERE user_id = ? AND podcast_key = ? AND item_key = ?",
        [(n, user_id, key[0], key[1]) for n, key in enumerate(order)],
    )


async def autoplay(conn: Connection, user_id: int) -> bool:
    row = await conn.fetch_one("SELECT autoplay FROM users WHERE id = ?", (user_id,))
    return row is None or bool(row[0])


async def set_autoplay(conn: Connection, user_id: int, on: bool) -> None:
    await conn.execute("UPDATE users SET autoplay = ? WHERE id = ?", (int(on), user_id))
