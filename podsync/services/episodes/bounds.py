"""Per-user bounds of what gpodder clients create: devices and episode actions.

- Devices (`gpodder.max_devices_per_user`): a request that would create one past the
  bound is refused (400, `device_limit_message`); an episode action naming an unknown
  device past the bound is skipped like any other unusable item.
- Episode actions (`gpodder.max_episode_actions_per_user`): an upload that would pass
  the bound is refused whole (400). The count is the one kept on the user's row by
  the writes (`episode_actions.count_for_user`), read inside the upload's write.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from podsync.config import GpodderConfig
from podsync.errors import LimitExceeded
from podsync.services.devices import device_limit_message
from podsync.store import Connection, devices, episode_actions
from podsync.store.episodes import EpisodeAction

log = logging.getLogger("podsync.gpodder")


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
        count = await episode_actions.count_for_user(conn, user_id)
        if count + new > self.max_actions:
            raise LimitExceeded(action_limit_message(count + new, self.max_actions))
