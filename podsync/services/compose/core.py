"""The services every API request path uses, built once per process on first ask."""

from __future__ import annotations

import contextlib
from functools import cached_property
from typing import TYPE_CHECKING

from podsync.config import Config
from podsync.services.app_passwords import AppPasswordService
from podsync.services.auth import AuthService
from podsync.services.basic_auth import BasicAuth
from podsync.services.feed_info import FeedInfoService
from podsync.services.health import HealthService
from podsync.services.listing import ListingService
from podsync.services.passwords import HASH_THREADS, PasswordService
from podsync.services.sync import SyncService
from podsync.services.sync_health import SyncHealth
from podsync.storage.engine import Engine

if TYPE_CHECKING:
    # Loaded by the property that builds each: the feed fetcher only when fetching is
    # on (feedparser and a client), OPML with the first export or import, and the
    # rest (the episode core, the devices, the served positions, the gpodder and
    # Nextcloud APIs' own services: about 0.7 MB) with the first request of those
    # APIs (web/routes.py, `_load_gpodder_apis`) or of the web UI, or by the CLI command that needs
    # them; an idle server, and one that only the Open Podcast API uses, never holds
    # them (docs/performance.md, "idle memory").
    from podsync.services.devices import DeviceService
    from podsync.services.episodes.writes import EpisodeWrites
    from podsync.services.feeds.fetcher import FeedFetcher
    from podsync.services.gpodder import Gpodder
    from podsync.services.nextcloud.login_flows import LoginFlows
    from podsync.services.nextcloud.sync import NextcloudSync
    from podsync.services.opml_io import OpmlService
    from podsync.services.served import ServedPositions


class Services:
    """Each service is built on its first use and then shared. `secret` (the token
    signing key, `services.auth.load_secret_key`) is needed only by the services that
    sign or check tokens; the CLI, which uses none of them, leaves it empty.
    `max_pending_logins`: this process's share of auth.max_pending_logins."""

    def __init__(
        self,
        config: Config,
        db: Engine,
        secret: str = "",
        *,
        max_pending_logins: int | None = None,
        password_threads: int = HASH_THREADS,
    ) -> None:
        self.config = config
        self.db = db
        self._secret = secret
        self._max_pending = max_pending_logins
        self._password_threads = password_threads

    @property
    def secret(self) -> str:
        if not self._secret:
            raise RuntimeError("a service that signs tokens was asked for without the key")
        return self._secret

    @cached_property
    def passwords(self) -> PasswordService:
        return PasswordService.for_config(self.config.auth, threads=self._password_threads)

    @cached_property
    def auth(self) -> AuthService:
        return AuthService(
            self.db, self.config.auth, self.secret, self.passwords, max_pending=self._max_pending
        )

    @cached_property
    def sync(self) -> SyncService:
        return SyncService(self.db, self.config.sync)

    @cached_property
    def listing(self) -> ListingService:
        return ListingService(self.db, self.secret)

    @cached_property
    def app_passwords(self) -> AppPasswordService:
        return AppPasswordService(self.db)

    @cached_property
    def basic_auth(self) -> BasicAuth:
        seconds = self.config.gpodder.basic_cache_seconds
        return BasicAuth(self.db, self.auth, self.app_passwords, self.secret, seconds)

    @cached_property
    def served(self) -> ServedPositions:
        from podsync.services.served import ServedPositions

        return ServedPositions(self.db)

    @cached_property
    def devices(self) -> DeviceService:
        from podsync.services.devices import DeviceService

        return DeviceService(self.db, self.config.gpodder.max_devices_per_user)

    @cached_property
    def episode_writes(self) -> EpisodeWrites:
        """The one write path of episode actions: every protocol, the web player and
        the import (services/episodes/)."""
        from podsync.services.episodes.bounds import UploadBounds
        from podsync.services.episodes.writes import EpisodeWrites

        return EpisodeWrites(self.db, UploadBounds(self.config.gpodder))

    @cached_property
    def gpodder(self) -> Gpodder:
        from podsync.services.gpodder import build_gpodder

        return build_gpodder(
            self.db,
            self.auth,
            self.sync,
            self.secret,
            self.config.gpodder,
            self.basic_auth,
            self.served,
            self.devices,
            self.episode_writes,
        )

    @cached_property
    def nextcloud(self) -> NextcloudSync:
        from podsync.services.nextcloud.sync import NextcloudSync

        return NextcloudSync(self.db, self.episode_writes, self.gpodder.subscriptions, self.served)

    @cached_property
    def sync_health(self) -> SyncHealth:
        return SyncHealth(self.db)

    @cached_property
    def login_flows(self) -> LoginFlows:
        from podsync.services.nextcloud.login_flows import LoginFlows

        return LoginFlows(self.db)

    @cached_property
    def feed_info(self) -> FeedInfoService:
        return FeedInfoService(self.db, self.config.feeds.fetch_metadata)

    @cached_property
    def health(self) -> HealthService:
        return HealthService(self.db)

    @cached_property
    def opml(self) -> OpmlService:
        from podsync.services.opml_io import OpmlService  # loads with the first export

        return OpmlService(self.db, self.sync)

    @cached_property
    def feed_fetcher(self) -> FeedFetcher | None:
        """None with feeds.fetch_metadata off: then nothing opens an outbound
        connection. Built, not opened: its owner opens and closes it."""
        feeds = self.config.feeds
        if not feeds.fetch_metadata:
            return None
        from podsync.services.feeds.fetcher import FeedFetcher
        from podsync.services.feeds.http import FeedClient

        return FeedFetcher(
            self.db,
            FeedClient(feeds.allow_private),
            feeds.refresh_hours,
            artwork_max_bytes=feeds.artwork_max_kib << 10,
            artwork_store_bytes=feeds.artwork_store_mib << 20,
            artwork_share_bytes=feeds.artwork_user_share_mib << 20,
        )

    async def close(self) -> None:
        """What holds threads or pending writes: the served positions (flushed), the
        password hashing threads. The feed fetcher is its owner's to close."""
        try:
            if "served" in self.__dict__:
                with contextlib.suppress(Exception):  # logged; only an echo follows
                    await self.served.close()
        finally:
            if "passwords" in self.__dict__:
                self.passwords.close()
