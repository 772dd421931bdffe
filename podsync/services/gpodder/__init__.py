"""The gpodder v2 layer's services, built once and shared by its handlers."""

from __future__ import annotations

from dataclasses import dataclass

from podsync.config import GpodderConfig
from podsync.services.auth import AuthService
from podsync.services.basic_auth import BasicAuth
from podsync.services.devices import DeviceService
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.gpodder.auth import GpodderAuth
from podsync.services.gpodder.cursor import ServedCursors
from podsync.services.gpodder.episodes import EpisodeService
from podsync.services.gpodder.subscriptions import GpodderSubscriptions
from podsync.services.served import ServedPositions
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine


@dataclass(frozen=True)
class Gpodder:
    auth: GpodderAuth
    devices: DeviceService
    episodes: EpisodeService
    subscriptions: GpodderSubscriptions
    cursors: ServedCursors


def build_gpodder(
    db: Engine,
    auth: AuthService,
    sync: SyncService,
    secret_key: str,
    config: GpodderConfig,
    basic: BasicAuth,
    positions: ServedPositions,
    devices: DeviceService,
    writes: EpisodeWrites,
) -> Gpodder:
    return Gpodder(
        auth=GpodderAuth(db, auth, secret_key, config, basic),
        devices=devices,
        episodes=EpisodeService(db, config.episode_page_size, writes),
        subscriptions=GpodderSubscriptions(db, sync),
        cursors=ServedCursors(positions),
    )
