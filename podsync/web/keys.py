"""Typed keys for state shared through the application and the request."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from aiohttp import web

# Keys are data: they name their types for the checker only and import nothing of
# podsync at run time; the types come from layers below web/, which never import it
# back. (The metrics key lives beside `Metrics` in web/ops/metrics.py.)
if TYPE_CHECKING:
    from podsync.config import Config
    from podsync.model import User
    from podsync.services.app_passwords import AppPasswordService
    from podsync.services.auth import AuthService
    from podsync.services.basic_auth import BasicAuth
    from podsync.services.compose.core import Services
    from podsync.services.devices import DeviceService
    from podsync.services.episodes.writes import EpisodeWrites
    from podsync.services.feed_info import FeedInfoService
    from podsync.services.feeds.fetcher import FeedFetcher
    from podsync.services.listing import ListingService
    from podsync.services.nextcloud.login_flows import LoginFlows
    from podsync.services.nextcloud.sync import NextcloudSync
    from podsync.services.sync import SyncService
    from podsync.services.sync_health import SyncHealth
    from podsync.storage.engine import Engine
    from podsync.web.process import Worker

CONFIG: web.AppKey[Config] = web.AppKey("config")
# This process among the server's workers (web/process.py).
WORKER: web.AppKey[Worker] = web.AppKey("worker")
DB: web.AppKey[Engine] = web.AppKey("db")
# Every service, built in one place (services/compose/); the keys below name the
# ones the request path reads most, taken from it.
SERVICES: web.AppKey[Services] = web.AppKey("services")
AUTH: web.AppKey[AuthService] = web.AppKey("auth")
SYNC: web.AppKey[SyncService] = web.AppKey("sync")
LISTING: web.AppKey[ListingService] = web.AppKey("listing")
# The episode core every protocol, the web player and the import share: the devices
# (made on first use, bounded) and the one write path of episode actions.
DEVICES: web.AppKey[DeviceService] = web.AppKey("devices")
EPISODE_WRITES: web.AppKey[EpisodeWrites] = web.AppKey("episode_writes")
APP_PASSWORDS: web.AppKey[AppPasswordService] = web.AppKey("app_passwords")
# HTTP Basic on every API that takes it (gpodder, Nextcloud): app password or password.
BASIC_AUTH: web.AppKey[BasicAuth] = web.AppKey("basic_auth")
# Each device's and app password's last good sync and last refused attempt.
SYNC_HEALTH: web.AppKey[SyncHealth] = web.AppKey("sync_health")
# The Nextcloud gpoddersync API over the episode core, and Login Flow v2.
NEXTCLOUD: web.AppKey[NextcloudSync] = web.AppKey("nextcloud")
LOGIN_FLOWS: web.AppKey[LoginFlows] = web.AppKey("login_flows")
# What the feed fetcher learned (titles, artwork, episode titles, fetch errors).
FEED_INFO: web.AppKey[FeedInfoService] = web.AppKey("feed_info")
# The feed fetcher, for a fetch on demand (None with [feeds] fetch_metadata = false).
FEED_FETCHER: web.AppKey[FeedFetcher | None] = web.AppKey("feed_fetcher")

# A protocol's own error page: the middleware answers an error on a request the page claims
# (it returns a response: status, description) with it instead of the JSON shape.
# The web UI registers one for its pages.
ErrorPage = Callable[[web.Request, int, str], web.Response | None]
ERROR_PAGE: web.AppKey[ErrorPage] = web.AppKey("error_page")

REQUEST_ID = web.RequestKey("request_id", str)
CLIENT_ADDRESS = web.RequestKey("client_address", str)
# The peer is one of server.trusted_proxies: its X-Forwarded-* headers count. Set
# only then (True): read it with request.get(FROM_TRUSTED_PROXY, False).
FROM_TRUSTED_PROXY = web.RequestKey("from_trusted_proxy", bool)
USER: web.RequestKey[User] = web.RequestKey("user")
GPODDER_SESSION = web.RequestKey("gpodder_session", str)
