"""Typed keys for state shared through the application and the request."""

from __future__ import annotations

from aiohttp import web

from podsync.config import Config
from podsync.engine import Engine
from podsync.model import User
from podsync.services.auth import AuthService
from podsync.services.listing import ListingService
from podsync.services.sync import SyncService

CONFIG = web.AppKey("config", Config)
DB = web.AppKey("db", Engine)
AUTH = web.AppKey("auth", AuthService)
SYNC = web.AppKey("sync", SyncService)
LISTING = web.AppKey("listing", ListingService)

REQUEST_ID = web.RequestKey("request_id", str)
CLIENT_ADDRESS = web.RequestKey("client_address", str)
USER = web.RequestKey("user", User)
