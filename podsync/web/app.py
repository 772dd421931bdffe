"""create_app(config) -> web.Application: resources, middleware, routes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from types import ModuleType
from typing import TYPE_CHECKING

from aiohttp import web
from aiohttp.typedefs import Middleware

from podsync.config import Config
from podsync.errors import METRICS_EXTRA, MissingExtra
from podsync.services.app_passwords import AppPasswordService
from podsync.services.auth import AuthService, load_secret_key
from podsync.services.basic_auth import BasicAuth
from podsync.services.feed_info import FeedInfoService
from podsync.services.gpodder import Gpodder, build_gpodder
from podsync.services.gpodder.history import prune_superseded
from podsync.services.health import require_writable
from podsync.services.listing import ListingService
from podsync.services.nextcloud.login_flows import LoginFlows
from podsync.services.nextcloud.sync import NextcloudSync
from podsync.services.passwords import PasswordService
from podsync.services.sync import SyncService
from podsync.services.sync_health import SyncHealth
from podsync.storage.engine import Engine, create_engine, open_when_up
from podsync.web.cors import cors_middleware
from podsync.web.keys import (
    APP_PASSWORDS,
    AUTH,
    BASIC_AUTH,
    CONFIG,
    DB,
    FEED_FETCHER,
    FEED_INFO,
    GPODDER,
    LISTING,
    LOGIN_FLOWS,
    NEXTCLOUD,
    SYNC,
    SYNC_HEALTH,
)
from podsync.web.metrics import METRICS, metrics_middleware
from podsync.web.middleware import request_middleware, set_server_header
from podsync.web.routes import setup_routes

if TYPE_CHECKING:  # imported only when fetching is on (it brings feedparser and a client)
    from podsync.services.feeds.fetcher import FeedFetcher

log = logging.getLogger("podsync")
PRUNE_INTERVAL_S = 3600


async def _prune_periodically(
    sync: SyncService, gpodder: Gpodder, flows: LoginFlows, db: Engine, config: Config
) -> None:
    """Forget what is past its retention, now and every hour: action ids, the
    revocations of gpodder sessions whose cookies have all expired, and superseded
    episode actions past gpodder.episode_history_days."""
    while True:
        try:
            removed = await sync.prune_action_log()
            if removed:
                log.info("forgot %d action ids past their retention", removed)
            ended = await gpodder.auth.prune_revocations()
            if ended:
                log.info("forgot %d ended gpodder sessions past their cookies' lifetime", ended)
            await flows.prune()  # Login Flow v2 requests past their lifetime
            pruned = await prune_superseded(db, config.gpodder.episode_history_days)
            if pruned:
                log.info("pruned %d superseded episode actions past their history", pruned)
        except Exception:
            log.exception("pruning past their retention failed; trying again later")
        await asyncio.sleep(PRUNE_INTERVAL_S)


async def _stop(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _resources(app: web.Application) -> AsyncIterator[None]:
    config = app[CONFIG]
    db = create_engine(config.database)
    await open_when_up(db, config.database)
    passwords = PasswordService()
    pruner: asyncio.Task[None] | None = None
    fetcher: FeedFetcher | None = None
    fetching: asyncio.Task[None] | None = None
    try:
        # A server that cannot write would answer every sync with an error: refuse.
        await require_writable(db)
        secret = await load_secret_key(db, config.auth.secret_key)
        app[DB] = db
        app[AUTH] = AuthService(db, config.auth, secret, passwords)
        app[SYNC] = SyncService(db, config.sync)
        app[LISTING] = ListingService(db, secret)
        app[APP_PASSWORDS] = AppPasswordService(db)
        app[BASIC_AUTH] = BasicAuth(
            db, app[AUTH], app[APP_PASSWORDS], secret, config.gpodder.basic_cache_seconds
        )
        app[GPODDER] = build_gpodder(
            db, app[AUTH], app[SYNC], secret, config.gpodder, app[BASIC_AUTH]
        )
        app[NEXTCLOUD] = NextcloudSync(db, app[GPODDER])
        app[SYNC_HEALTH] = SyncHealth(db)
        app[LOGIN_FLOWS] = LoginFlows(db)
        app[FEED_INFO] = FeedInfoService(db, config.feeds.fetch_metadata)
        app[FEED_FETCHER] = None
        pruner = asyncio.create_task(
            _prune_periodically(app[SYNC], app[GPODDER], app[LOGIN_FLOWS], db, config)
        )
        # Off: then nothing here, or anywhere, opens an outbound connection.
        if not config.feeds.fetch_metadata:
            log.info("feeds.fetch_metadata is off: podsync makes no outbound connection")
        else:
            from podsync.services.feeds.fetcher import FeedFetcher
            from podsync.services.feeds.http import FeedClient

            client = FeedClient(config.feeds.allow_private)
            fetcher = FeedFetcher(
                db,
                client,
                config.feeds.refresh_hours,
                artwork_max_bytes=config.feeds.artwork_max_kib << 10,
                artwork_store_bytes=config.feeds.artwork_store_mib << 20,
            )
            await fetcher.open()
            app[FEED_FETCHER] = fetcher
            fetching = asyncio.create_task(fetcher.run_forever())
            log.info(
                "fetching subscribed feeds for titles and artwork, each at most every %d h%s",
                config.feeds.refresh_hours,
                " (private addresses allowed)" if config.feeds.allow_private else "",
            )
        yield
    finally:
        await _stop(pruner)
        await _stop(fetching)
        if fetcher is not None:
            await fetcher.close()
        await db.close()
        passwords.close()


def create_app(config: Config) -> web.Application:
    # Outermost first. CORS and metrics sit outside podsync's middleware (request id,
    # client address, bearer check, errors) so that they see (and decorate) the
    # final response of every error too. (The gpodder layer's transport and auth
    # rules wrap its own routes' handlers: web/gpodder/http.py.)
    middlewares: list[Middleware] = []
    if config.server.metrics:  # first: it times and counts CORS preflights too
        middlewares.append(metrics_middleware)
    if config.server.cors_origins:
        middlewares.append(cors_middleware(config.server.cors_origins))
    middlewares.append(request_middleware(config.server.trusted_proxies))
    app = web.Application(client_max_size=config.server.max_body_bytes, middlewares=middlewares)
    app[CONFIG] = config
    app.on_response_prepare.append(set_server_header)
    if config.server.metrics:
        app[METRICS] = _prometheus().Metrics()
    app.cleanup_ctx.append(_resources)
    setup_routes(app, config.gpodder.enabled, config.server.metrics, config.server.public_url)
    return app


def _prometheus() -> ModuleType:
    """web/prometheus.py, which needs the `metrics` extra: loaded only when metrics
    are on, so a server without them never imports prometheus-client."""
    try:
        from podsync.web import prometheus
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith("prometheus_client"):
            raise
        raise MissingExtra(
            f"server.metrics is on, but prometheus-client is not installed: {METRICS_EXTRA}"
        ) from None
    return prometheus
