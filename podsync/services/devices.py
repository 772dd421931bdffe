"""gpodder devices (gpodder spec 5.3, 5.4, 5.9). Every device of a user syncs the
same account-wide list (spec 6.1), so a device is only a name for a writer; an
unknown one is created on first use rather than answered with 404 (spec 12.3)."""

from __future__ import annotations

import re
from typing import Any

from podsync import timestamps
from podsync.errors import InvalidInput, LimitExceeded
from podsync.feeds import has_bad_characters
from podsync.storage.engine import Connection, Engine
from podsync.store import devices, meta, subscriptions
from podsync.store.devices import Device

MAX_DEVICE_ID = 64
DEVICE_ID = re.compile(rf"[A-Za-z0-9_.-]{{1,{MAX_DEVICE_ID}}}", re.ASCII)
TYPES = frozenset({"desktop", "laptop", "mobile", "server", "other"})
MAX_CAPTION = 256


def check_device_id(device_id: str) -> str:
    if not DEVICE_ID.fullmatch(device_id):
        raise InvalidInput("device id must be 1 to 64 characters of A-Z a-z 0-9 . _ -")
    return device_id


def parse_settings(body: Any) -> tuple[str | None, str | None]:
    """(caption, type) of a device update: absent or empty keys mean unchanged, and a
    type outside the five gpodder knows becomes 'other' (mygpoclient raises on any
    other type it reads back)."""
    if body is None:
        return None, None  # AntennaPod sends an empty body when it has nothing to set
    if not isinstance(body, dict):
        raise InvalidInput("device settings must be a JSON object")
    caption = body.get("caption")
    if not isinstance(caption, str) or not caption.strip():
        caption = None
    elif has_bad_characters(caption) or len(caption) > MAX_CAPTION:
        raise InvalidInput(f"caption must be at most {MAX_CAPTION} printable characters")
    kind = body.get("type")
    if not isinstance(kind, str) or not kind:
        kind = None
    elif kind.lower() not in TYPES:
        kind = "other"
    else:
        kind = kind.lower()
    return caption, kind


def device_limit_message(count: int, limit: int) -> str:
    return (
        f"device limit reached: this account has {count} devices, the limit is {limit} "
        f"(gpodder.max_devices_per_user); use one of them or ask the admin"
    )


async def check_new_device(conn: Connection, user_id: int, device_id: str, limit: int) -> None:
    """LimitExceeded when `device_id` is new and the user has `limit` devices already."""
    if await devices.exists(conn, user_id, device_id):
        return
    count = await devices.count_for_user(conn, user_id)
    if count >= limit:
        raise LimitExceeded(device_limit_message(count, limit))


class DeviceService:
    def __init__(self, db: Engine, max_devices: int = 100) -> None:
        self.db = db
        self.max_devices = max_devices  # gpodder.max_devices_per_user

    async def list(self, user_id: int) -> tuple[list[Device], int]:
        """The user's devices and the account-wide subscribed count, one snapshot."""
        async with self.db.snapshot() as conn:
            found = await devices.list_for_user(conn, user_id)
            count = await subscriptions.count_subscribed(conn, user_id)
        return found, count

    async def update(self, user_id: int, device_id: str, body: Any) -> None:
        caption, kind = parse_settings(body)
        async with self.db.write(user=user_id) as conn:
            await meta.lock_user(conn, user_id)
            await check_new_device(conn, user_id, check_device_id(device_id), self.max_devices)
            await devices.upsert(
                conn, user_id, check_device_id(device_id), caption, kind, timestamps.now_us()
            )

    async def exists(self, user_id: int, device_id: str) -> bool:
        async with self.db.read() as conn:
            return await devices.exists(conn, user_id, check_device_id(device_id))

    async def ensure(self, user_id: int, device_id: str, caption: str | None = None) -> None:
        """Create the device if the user lacks it (captioned `caption`, else its id); a
        read, and a write only when new. An existing device is never changed."""
        check_device_id(device_id)
        async with self.db.read() as conn:
            if await devices.exists(conn, user_id, device_id):
                return
        async with self.db.write(user=user_id) as conn:
            await meta.lock_user(conn, user_id)
            await check_new_device(conn, user_id, device_id, self.max_devices)
            if caption is None:
                await devices.ensure(conn, user_id, [device_id], timestamps.now_us())
            elif not await devices.exists(conn, user_id, device_id):
                await devices.upsert(conn, user_id, device_id, caption, None, timestamps.now_us())

    async def sync_groups(self, user_id: int) -> dict[str, Any]:
        """Kasts' sync-devices view: all devices are always in one group."""
        async with self.db.read() as conn:
            ids = [d.device_id for d in await devices.list_for_user(conn, user_id)]
        if len(ids) >= 2:
            return {"synchronized": [ids], "not-synchronized": []}
        return {"synchronized": [], "not-synchronized": ids}
