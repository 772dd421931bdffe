"""Typed keys for state shared through the application and the request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from podsync.config import Config
from podsync.engine import Engine
from podsync.model import User
from podsync.services.auth import AuthService
from podsync.services.gpodder import Gpodder
from podsync.services.listing import ListingService
from podsync.services.sync import SyncService

if TYPE_CHECKING:  # for the type only: podsync.web.metrics imports these keys
    from podsync.web.metrics import Metrics

CONFIG = web.AppKey("config", Config)
DB = web.AppKey("db", Engine)
AUTH = web.AppKey("auth", AuthService)
SYNC = web.AppKey("sync", SyncService)
LISTING = web.AppKey("listing", ListingService)
METRICS: web.AppKey[Metrics] = web.AppKey("metrics")
GPODDER = web.AppKey("gpodder", Gpodder)

REQUEST_ID = web.RequestKey("request_id", str)
CLIENT_ADDRESS = web.RequestKey("client_address", str)
# The peer is one of server.trusted_proxies: its X-Forwarded-* headers count.
FROM_TRUSTED_PROXY = web.RequestKey("from_trusted_proxy", bool)
USER = web.RequestKey("user", User)
GPODDER_SESSION = web.RequestKey("gpodder_session", str)
