"""Typed keys for state shared through the application and the request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

# Keys are data: they name their types for the checker only and import nothing of
# podsync at run time; the types come from layers below web/, which never import it
# back. (The metrics key lives beside `Metrics` in web/metrics.py.)
if TYPE_CHECKING:
    from podsync.config import Config
    from podsync.model import User
    from podsync.services.auth import AuthService
    from podsync.services.feed_info import FeedInfoService
    from podsync.services.feeds.fetcher import FeedFetcher
    from podsync.services.gpodder import Gpodder
    from podsync.services.listing import ListingService
    from podsync.services.sync import SyncService
    from podsync.storage.engine import Engine

CONFIG: web.AppKey[Config] = web.AppKey("config")
DB: web.AppKey[Engine] = web.AppKey("db")
AUTH: web.AppKey[AuthService] = web.AppKey("auth")
SYNC: web.AppKey[SyncService] = web.AppKey("sync")
LISTING: web.AppKey[ListingService] = web.AppKey("listing")
GPODDER: web.AppKey[Gpodder] = web.AppKey("gpodder")
# What the feed fetcher learned (titles, artwork, episode titles, fetch errors).
FEED_INFO: web.AppKey[FeedInfoService] = web.AppKey("feed_info")
# The feed fetcher, for a fetch on demand (None with [feeds] fetch_metadata = false).
FEED_FETCHER: web.AppKey[FeedFetcher | None] = web.AppKey("feed_fetcher")

REQUEST_ID = web.RequestKey("request_id", str)
CLIENT_ADDRESS = web.RequestKey("client_address", str)
# The peer is one of server.trusted_proxies: its X-Forwarded-* headers count.
FROM_TRUSTED_PROXY = web.RequestKey("from_trusted_proxy", bool)
USER: web.RequestKey[User] = web.RequestKey("user")
GPODDER_SESSION = web.RequestKey("gpodder_session", str)
