"""gpodder devices: the names a user's apps sync under (gpodder spec 6.4)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from podsync.store import Connection
from podsync.store.value_lists import in_list


@dataclass(frozen=True)
class Device:
    device_id: str
    caption: str
    type: str
    created_at: int
    last_seen_at: int


_COLUMNS = "device_id, caption, type, created_at, last_seen_at"


def _device(row: Any) -> Device:
    return Device(str(row[0]), str(row[1]), str(row[2]), int(row[3]), int(row[4]))


async def list_for_user(conn: Connection, user_id: int) -> list[Device]:
    """The user's devices in creation order."""
    rows = await conn.fetch_all(
        f"SELECT {_COLUMNS} FROM gpodder_devices WHERE user_id = ? ORDER BY id", (user_id,)
    )
    return [_device(r) for r in rows]


async def upsert(
    conn: Connection,
    user_id: int,
    device_id: str,
    caption: str | None,
    type_: str | None,
    now: int,
) -> None:
    """Create the device, or change only the given fields of an existing one. A new
    device without a caption is captioned with its id; without a type it is 'other'."""
    await conn.execute(
        "INSERT INTO gpodder_devices "
        "(user_id, device_id, caption, type, created_at, last_seen_at) "
        "VALUES (?, ?, coalesce(?, ?), coalesce(?, 'other'), ?, ?) "
        "ON CONFLICT (user_id, device_id) DO UPDATE SET "
        "caption = coalesce(?, gpodder_devices.caption), type = coalesce(?, gpodder_devices.type), "
        "last_seen_at = ?",
        (user_id, device_id, caption, device_id, type_, now, now, caption, type_, now),
    )


async def ensure(conn: Connection, user_id: int, device_ids: Sequence[str], now: int) -> None:
    """Create any of these devices the user lacks (type 'other'); never changes one."""
    await conn.execute_many(
        "INSERT INTO gpodder_devices "
        "(user_id, device_id, caption, type, created_at, last_seen_at) "
        "VALUES (?, ?, ?, 'other', ?, ?) ON CONFLICT (user_id, device_id) DO NOTHING",
        [(user_id, d, d, now, now) for d in dict.fromkeys(device_ids)],
    )


async def count_by_user(conn: Connection) -> dict[int, int]:
    rows = await conn.fetch_all("SELECT user_id, count(*) FROM gpodder_devices GROUP BY user_id")
    return {int(u): int(c) for u, c in rows}


async def exists(conn: Connection, user_id: int, device_id: str) -> bool:
    rows = await conn.fetch_all(
        "SELECT 1 FROM gpodder_devices WHERE user_id = ? AND device_id = ?",
        (user_id, device_id),
    )
    return bool(rows)


async def existing(conn: Connection, user_id: int, device_ids: Sequence[str]) -> set[str]:
    """Which of these device ids the user has."""
    if not device_ids:
        return set()
    marks, bound = in_list(device_ids, dialect=conn.dialect)
    rows = await conn.fetch_all(
        f"SELECT device_id FROM gpodder_devices WHERE user_id = ? AND device_id IN ({marks})",
        (user_id, *bound),
    )
    return {str(r[0]) for r in rows}


async def count_for_user(conn: Connection, user_id: int) -> int:
    row = await conn.fetch_one("SELECT count(*) FROM gpodder_devices WHERE user_id = ?", (user_id,))
    return int(row[0])


async def rename(conn: Connection, user_id: int, device_id: str, caption: str) -> bool:
    """Set a device's caption (not its last-seen time); False when there is none."""
    changed = await conn.execute(
        "UPDATE gpodder_devices SET caption = ? WHERE user_id = ? AND device_id = ?",
        (caption, user_id, device_id),
    )
    return changed > 0


async def remove(conn: Connection, user_id: int, device_id: str) -> bool:
    """Forget a device (its episode actions stay); False when there is none."""
    removed = await conn.execute(
        "DELETE FROM gpodder_devices WHERE user_id = ? AND device_id = ?", (user_id, device_id)
    )
    return removed > 0
