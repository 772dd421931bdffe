"""create_app(config) -> web.Application: resources, middleware, routes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from podsync.config import Config
from podsync.errors import METRICS_EXTRA, MissingExtra
from podsync.services.auth import load_secret_key
from podsync.services.compose.core import Services
from podsync.services.health import require_writable
from podsync.services.retention import forget_past_retention
from podsync.services.sync import SyncService
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
    LISTING,
    SERVICES,
    SYNC,
    SYNC_HEALTH,
    WORKER,
)
from podsync.web.middleware import request_middleware, set_server_header
from podsync.web.opa.guard import check_bearer
from podsync.web.ops.metrics import METRICS, metrics_middleware
from podsync.web.process import ALONE, Worker
from podsync.web.routes import setup_routes

if TYPE_CHECKING:  # imported only when fetching is on (it brings feedparser and a client)
    from podsync.services.feeds.fetcher import FeedFetcher

log = logging.getLogger("podsync")
PRUNE_INTERVAL_S = 3600
WRITE_TURN_FILE = "write.lock"  # in the workers' shared directory
METRICS_PUBLISH_S = 1.0


async def _prune_periodically(db: Engine, sync: SyncService, config: Config) -> None:
    """Forget what is past its retention (services/retention.py), now and every hour."""
    while True:
        try:
            await forget_past_retention(db, sync, config)
        except Exception:
            log.exception("pruning past their retention failed; trying again later")
        await asyncio.sleep(PRUNE_INTERVAL_S)


async def _publish_metrics(app: web.Application) -> None:
    """With several workers: this worker's metrics where a scrape of any other adds
    them up (web/ops/prometheus.py), every METRICS_PUBLISH_S."""
    while True:
        await asyncio.sleep(METRICS_PUBLISH_S)
        try:
            _publish_now(app)
        except OSError as exc:
            log.warning("metrics not published for the other workers: %s", exc)


def _publish_now(app: web.Application) -> None:
    metrics: Any = app[METRICS]  # web/ops/prometheus.py's Metrics
    metrics.set_commits(app[DB].commits)
    metrics.publish()


async def _stop(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _checkpoints(worker: Worker) -> str:
    """Who checkpoints the SQLite log: this process alone, or the leader of several
    workers for all of them (`storage/sqlite_checkpoint.py`)."""
    if worker.count == 1 and not worker.supervised:
        return "own"
    return "watch" if worker.leader else "none"


async def _resources(app: web.Application) -> AsyncIterator[None]:
    config = app[CONFIG]
    worker = app[WORKER]
    turn = os.path.join(worker.shared_dir, WRITE_TURN_FILE) if worker.shared_dir else ""
    db = create_engine(config.database, _checkpoints(worker), turn)
    await open_when_up(db, config.database)
    services: Services | None = None
    pruner: asyncio.Task[None] | None = None
    fetcher: FeedFetcher | None = None
    fetching: asyncio.Task[None] | None = None
    publishing: asyncio.Task[None] | None = None
    try:
        # A server that cannot write would answer every sync with an error: refuse.
        await require_writable(db)
        secret = await load_secret_key(db, config.auth.secret_key)
        app[DB] = db
        # Each worker verifies one password at a time and keeps its share of
        # auth.max_pending_logins waiting: the setting stays the server's.
        pending = worker.share(config.auth.max_pending_logins)
        services = Services(config, db, secret, max_pending_logins=pending)
        app[SERVICES] = services
        app[AUTH] = services.auth
        app[SYNC] = services.sync
        app[LISTING] = services.listing
        app[APP_PASSWORDS] = services.app_passwords
        app[BASIC_AUTH] = services.basic_auth
        app[SYNC_HEALTH] = services.sync_health
        app[FEED_INFO] = services.feed_info
        # Off: then nothing here, or anywhere, opens an outbound connection.
        fetcher = services.feed_fetcher
        app[FEED_FETCHER] = fetcher
        # What runs once per server, not once per worker: on the leader.
        if worker.leader:
            pruner = asyncio.create_task(_prune_periodically(db, services.sync, config))
        if fetcher is None:
            if worker.leader:
                log.info("feeds.fetch_metadata is off: podsync makes no outbound connection")
        else:
            await fetcher.open()  # every worker fetches what a person asks for
            if worker.leader:  # and the leader the feeds that are due
                fetching = asyncio.create_task(fetcher.run_forever())
                log.info(
                    "fetching subscribed feeds for titles and artwork, each at most every %d h%s",
                    config.feeds.refresh_hours,
                    " (private addresses allowed)" if config.feeds.allow_private else "",
                )
        if METRICS in app and worker.supervised:
            publishing = asyncio.create_task(_publish_metrics(app))
        yield
    finally:
        await _stop(publishing)
        if METRICS in app and worker.supervised and DB in app:
            _publish_now(app)  # the numbers a worker that replaces this one goes on from
        await _stop(pruner)
        await _stop(fetching)
        if fetcher is not None:
            try:
                await fetcher.let_go()
            except Exception as exc:  # the database is gone: the claims run out instead
                log.warning("the feed fetcher's claims were not given back: %s", exc)
            await fetcher.close()
        if services is not None:
            await services.close()
        await db.close()


def create_app(config: Config, worker: Worker = ALONE) -> web.Application:
    # Outermost first. CORS and metrics sit outside podsync's middleware (request id,
    # client address, errors) so that they see (and decorate) the
    # final response of every error too. (The gpodder layer's transport and auth
    # rules wrap its own routes' handlers: web/gpodder/http.py.)
    middlewares: list[Middleware] = []
    if config.server.metrics:  # first: it times and counts CORS preflights too
        middlewares.append(metrics_middleware)
    if config.server.cors_origins:
        middlewares.append(cors_middleware(config.server.cors_origins))
    middlewares.append(request_middleware(config.server.trusted_proxies, check_bearer))
    app = web.Application(client_max_size=config.server.max_body_bytes, middlewares=middlewares)
    app[CONFIG] = config
    app[WORKER] = worker
    app.on_response_prepare.append(set_server_header)
    if config.server.metrics:
        shared = worker.shared_dir if worker.supervised else ""
        app[METRICS] = _prometheus().Metrics(shared, worker.index)
    app.cleanup_ctx.append(_resources)
    setup_routes(app, config.gpodder.enabled, config.server.metrics, config.server.public_url)
    return app


def _prometheus() -> ModuleType:
    """web/ops/prometheus.py, which needs the `metrics` extra: loaded only when metrics
    are on, so a server without them never imports prometheus-client."""
    try:
        from podsync.web.ops import prometheus
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith("prometheus_client"):
            raise
        raise MissingExtra(
            f"server.metrics is on, but prometheus-client is not installed: {METRICS_EXTRA}"
        ) from None
    return prometheus
