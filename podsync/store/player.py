"""What the web UI's player keeps for a person, apart from episode actions: the speed
they listen to each podcast at, and the episodes they removed from Continue listening.
Neither reaches the apps (the gpodder and Nextcloud APIs carry no such thing)."""

from __future__ import annotations

from collections.abc import Collection

from podsync.store import Connection
from podsync.store.value_lists import in_list


async def speed(conn: Connection, user_id: int, podcast_key: str) -> int | None:
    """The person's speed for the podcast, in percent (None: never set)."""
    row = await conn.fetch_one(
        "SELECT speed FROM podcast_speeds WHERE user_id = ? AND podcast_key = ?",
        (user_id, podcast_key),
    )
    return None if row is None else int(row[0])


async def set_speed(
    conn: Connection, user_id: int, podcast_key: str, percent: int, now: int
) -> None:
    await conn.execute(
        "INSERT INTO podcast_speeds (user_id, podcast_key, speed, set_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (user_id, podcast_key) DO UPDATE SET speed = excluded.speed, "
        "set_at = excluded.set_at",
        (user_id, podcast_key, percent, now),
    )


async def remove_from_continue(conn: Connection, user_id: int, episode_id: int, now: int) -> None:
    await conn.execute(
        "INSERT INTO continue_removed (user_id, episode_id, removed_at) VALUES (?, ?, ?) "
        "ON CONFLICT (user_id, episode_id) DO UPDATE SET removed_at = excluded.removed_at",
        (user_id, episode_id, now),
    )


async def removed_from_continue(
    conn: Connection, user_id: int, episode_ids: Collection[int]
) -> dict[int, int]:
    """When each of these episodes was removed from Continue listening (those that
    were), by episode id."""
    if not episode_ids:
        return {}
    marks, bound = in_list(list(episode_ids), dialect=conn.dialect)
    rows = await conn.fetch_all(
        "SELECT episode_id, removed_at FROM continue_removed "
        f"WHERE user_id = ? AND episode_id IN ({marks})",
        (user_id, *bound),
    )
    return {int(r[0]): int(r[1]) for r in rows}
