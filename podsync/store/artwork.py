"""Feeds' artwork as podsync keeps it (table `artwork`, and the `artwork_*` columns of
`feed_info`): one row per distinct image, by the SHA-256 of its bytes, whatever
number of feeds name it; an image goes with the last feed that names it.

Storing an image and naming it from a feed, and deleting an image no feed names,
take a lock on the image's hash on PostgreSQL (where writes run side by side), so an
image one feed is about to name is never deleted under it; SQLite has one writer.
"""

from __future__ import annotations

from dataclasses import dataclass

from podsync.store import Connection

# The class of the PostgreSQL advisory locks taken here (the two-key form: its own
# space, apart from the one-key locks of users).
_LOCK_CLASS = 0x41525457


@dataclass(frozen=True, slots=True)
class Kept:
    """Where a feed's image came from: its URL, the validators its answer gave, when."""

    source: str
    etag: str | None
    last_modified: str | None
    at: int


async def _lock(conn: Connection, digest: str) -> None:
    if conn.dialect == "postgresql":
        await conn.fetch_one(
            "SELECT pg_advisory_xact_lock(?::int, hashtext(?))", (_LOCK_CLASS, digest)
        )


async def _current(conn: Connection, url_key: str) -> str | None:
    row = await conn.fetch_one("SELECT artwork_hash FROM feed_info WHERE url_key = ?", (url_key,))
    return None if row is None or row[0] is None else str(row[0])


async def _collect(conn: Connection, digest: str) -> None:
    """Delete the image unless a feed still names it."""
    await _lock(conn, digest)
    await conn.execute(
        "DELETE FROM artwork WHERE hash = ? "
        "AND NOT EXISTS (SELECT 1 FROM feed_info WHERE artwork_hash = ?)",
        (digest, digest),
    )


async def total_bytes(conn: Connection) -> int:
    """The size of every image kept (from the index on the sizes)."""
    row = await conn.fetch_one("SELECT coalesce(sum(size), 0) FROM artwork")
    return 0 if row is None else int(row[0])


async def used_by(conn: Connection, user_id: int) -> int:
    """The size of the distinct images the user's subscribed feeds name: the user's
    part of the store."""
    row = await conn.fetch_one(
        "SELECT coalesce(sum(size), 0) FROM artwork WHERE hash IN ("
        "SELECT f.artwork_hash FROM subscriptions s JOIN feed_info f ON f.url_key = s.url_key "
        "WHERE s.user_id = ? AND s.unsubscribed_at IS NULL AND f.artwork_hash IS NOT NULL)",
        (user_id,),
    )
    return 0 if row is None else int(row[0])


async def subscribers(conn: Connection, url_key: str) -> list[int]:
    """The users subscribed to the feed now."""
    rows = await conn.fetch_all(
        "SELECT user_id FROM subscriptions WHERE url_key = ? AND unsubscribed_at IS NULL "
        "ORDER BY user_id",
        (url_key,),
    )
    return [int(r[0]) for r in rows]


@dataclass(frozen=True, slots=True)
class Room:
    """The bounds a new image must fit: the store in all, each user's share; `asking`:
    the user who asked for the feed (a Subscribe before the subscription exists, a
    Refresh), counted as one of its subscribers."""

    store_bytes: int
    share_bytes: int
    asking: int | None = None


async def _no_room(conn: Connection, url_key: str, size: int, room: Room) -> str | None:
    """Why an image of `size` bytes new to the store may not be kept for the feed:
    the store is full, or every subscriber of the feed has used their share (an image
    is kept when one of them has room for it)."""
    if await total_bytes(conn) + size > room.store_bytes:
        return "podsync's artwork store is full (feeds.artwork_store_mib)"
    users = await subscribers(conn, url_key)
    if room.asking is not None and room.asking not in users:
        users.append(room.asking)
    for user_id in users:
        if await used_by(conn, user_id) + size <= room.share_bytes:
            return None
    return (
        "the share of podsync's artwork store its subscribers may use is used up "
        "(feeds.artwork_user_share_mib)"
    )


async def keep(
    conn: Connection,
    url_key: str,
    digest: str,
    content_type: str,
    body: bytes,
    kept: Kept,
    room: Room,
) -> str | None:
    """Make this image the feed's (storing it unless it is stored already), and drop
    the one it had when no other feed names it. A new image that does not fit `room`
    is not stored: the feed keeps its image, and the reason is returned (and kept as
    the feed's artwork error). Call in a write."""
    await _lock(conn, digest)
    stored = await conn.fetch_one("SELECT 1 FROM artwork WHERE hash = ?", (digest,))
    if stored is None:
        error = await _no_room(conn, url_key, len(body), room)
        if error is not None:
            await failed(conn, url_key, kept.source, error, kept.at)
            return error
        await conn.execute(
            "INSERT INTO artwork (hash, content_type, size, stored_at, bytes) "
            "VALUES (?, ?, ?, ?, ?)",
            (digest, content_type, len(body), kept.at, body),
        )
    before = await _current(conn, url_key)
    await conn.execute(
        "UPDATE feed_info SET artwork_hash = ?, artwork_source = ?, artwork_etag = ?, "
        "artwork_last_modified = ?, artwork_checked_at = ?, artwork_error = NULL "
        "WHERE url_key = ?",
        (digest, kept.source, kept.etag, kept.last_modified, kept.at, url_key),
    )
    if before is not None and before != digest:
        await _collect(conn, before)
    return None


async def still(conn: Connection, url_key: str, kept: Kept) -> None:
    """A conditional GET found the feed's image unchanged. Call in a write."""
    await conn.execute(
        "UPDATE feed_info SET artwork_checked_at = ?, artwork_error = NULL, "
        "artwork_etag = coalesce(?, artwork_etag), "
        "artwork_last_modified = coalesce(?, artwork_last_modified) WHERE url_key = ?",
        (kept.at, kept.etag, kept.last_modified, url_key),
    )


async def failed(conn: Connection, url_key: str, source: str, error: str, at: int) -> None:
    """The image at `source` could not be had: the feed keeps the image it had, and
    the reason. The validators stay if they are this URL's. Call in a write."""
    await conn.execute(
        "UPDATE feed_info SET "
        "artwork_etag = CASE WHEN artwork_source = ? THEN artwork_etag END, "
        "artwork_last_modified = CASE WHEN artwork_source = ? THEN artwork_last_modified END, "
        "artwork_source = ?, artwork_error = ?, artwork_checked_at = ? WHERE url_key = ?",
        (source, source, source, error, at, url_key),
    )


async def forget(conn: Connection, url_key: str) -> None:
    """The feed names no image any more. Call in a write."""
    before = await _current(conn, url_key)
    await conn.execute(
        "UPDATE feed_info SET artwork_hash = NULL, artwork_source = NULL, artwork_etag = NULL, "
        "artwork_last_modified = NULL, artwork_error = NULL, artwork_checked_at = NULL "
        "WHERE url_key = ?",
        (url_key,),
    )
    if before is not None:
        await _collect(conn, before)


async def unnamed(conn: Connection, limit: int) -> list[str]:
    """Up to `limit` images no feed names (left by feeds collected)."""
    rows = await conn.fetch_all(
        "SELECT hash FROM artwork a WHERE NOT EXISTS "
        "(SELECT 1 FROM feed_info f WHERE f.artwork_hash = a.hash) LIMIT ?",
        (limit,),
    )
    return [str(r[0]) for r in rows]


async def collect(conn: Connection, digest: str) -> None:
    """Delete the image unless a feed names it (under its lock). Call in a write."""
    await _collect(conn, digest)


async def image_for(conn: Connection, user_id: int, digest: str) -> tuple[str, bytes] | None:
    """(type, bytes) of a kept image by its hash, when a podcast of the user (one
    subscribed to now or before) has it; else None."""
    row = await conn.fetch_one(
        "SELECT content_type, bytes FROM artwork WHERE hash = ? AND EXISTS ("
        "SELECT 1 FROM feed_info f JOIN subscriptions s ON s.url_key = f.url_key "
        "WHERE f.artwork_hash = ? AND s.user_id = ?)",
        (digest, digest, user_id),
    )
    return None if row is None else (str(row[0]), bytes(row[1]))
