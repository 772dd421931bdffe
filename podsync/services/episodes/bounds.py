"""Per-user bounds of what gpodder clients create: devices and episode actions.

- Devices (`gpodder.max_devices_per_user`): a request that would create one past the
  bound is refused (400, `device_limit_message`); an episode action naming an unknown
  device past the bound is skipped like any other unusable item.
- Episode actions (`gpodder.max_episode_actions_per_user`): an upload that would pass
  the bound is refused whole (400). Counting a user's actions reads their whole index
  range (5 ms at 200,000), so each process remembers a count and the highest seq it
  covered, and adds only the rows stored since (one short index range per upload).
  Deletes (the hourly pruning) only make the remembered count too high: when it says
  "past the bound", the count is taken again before refusing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from podsync.config import GpodderConfig
from podsync.errors import LimitExceeded
from podsync.services.devices import device_limit_message
from podsync.store import Connection, devices, episode_actions
from podsync.store.episodes import EpisodeAction

log = logging.getLogger("podsync.gpodder")

# How long a remembered count is trusted before it is taken again (the pruning runs
# hourly; another process's deletes are seen within this).
COUNT_TTL_S = 3600.0


def action_limit_message(count: int, limit: int) -> str:
    return (
        f"episode action limit reached: this upload would make {count} stored episode "
        f"actions, the limit is {limit} (gpodder.max_episode_actions_per_user); "
        f"nothing was stored"
    )


class UploadBounds:
    def __init__(self, config: GpodderConfig) -> None:
        self.max_devices = config.max_devices_per_user
        self.max_actions = config.max_episode_actions_per_user
        # user id -> (action count, the highest seq it covers, when it was taken)
        self._counts: dict[int, tuple[int, int, float]] = {}

    async def admit(
        self,
        conn: Connection,
        user_id: int,
        parsed: Sequence[EpisodeAction],
        now: int,
    ) -> tuple[list[EpisodeAction], int]:
        """Inside the upload's write: create the devices the actions name while the
        bound allows, and return the actions to store with how many were skipped for
        naming a device past it."""
        named = list(dict.fromkeys(a.device_id for a in parsed if a.device_id is not None))
        refused: set[str] = set()
        if named:
            have = await devices.existing(conn, user_id, named)
            missing = [d for d in named if d not in have]
            if missing:
                room = self.max_devices - await devices.count_for_user(conn, user_id)
                refused = set(missing[max(room, 0) :])
                if room > 0:  # only the new ones: ensure never changes a device
                    await devices.ensure(conn, user_id, missing[:room], now)
        kept = [a for a in parsed if a.device_id not in refused]
        for device_id in sorted(refused):
            log.info(
                "episode upload of user %d: actions of device %r skipped: %s",
                user_id,
                device_id,
                device_limit_message(self.max_devices, self.max_devices),
            )
        return kept, len(parsed) - len(kept)

    async def check_actions(self, conn: Connection, user_id: int, new: int) -> None:
        """LimitExceeded when `new` more actions would pass the action bound (the
        caller's transaction then writes nothing)."""
        if not new:
            return
        count = await self._count(conn, user_id, fresh=False)
        if count + new <= self.max_actions:
            return
        count = await self._count(conn, user_id, fresh=True)
        if count + new > self.max_actions:
            raise LimitExceeded(action_limit_message(count + new, self.max_actions))

    async def _count(self, conn: Connection, user_id: int, fresh: bool) -> int:
        remembered = self._counts.get(user_id)
        if fresh or remembered is None or time.monotonic() - remembered[2] > COUNT_TTL_S:
            count, high = await episode_actions.count_and_high(conn, user_id)
            self._counts[user_id] = (count, high, time.monotonic())
            return count
        count, high, taken = remembered
        added, new_high = await episode_actions.count_after(conn, user_id, high)
        self._counts[user_id] = (count + added, max(high, new_high), taken)
        return count + added
