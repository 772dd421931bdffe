"""create_app(config) -> web.Application: resources, middleware, routes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from aiohttp import web

from podsync.config import Config
from podsync.engine import create_engine
from podsync.services.auth import AuthService, load_secret_key
from podsync.services.listing import ListingService
from podsync.services.passwords import PasswordService
from podsync.services.sync import SyncService
from podsync.web.keys import AUTH, CONFIG, DB, LISTING, SYNC
from podsync.web.middleware import auth_middleware, client_address_middleware, errors_middleware
from podsync.web.routes import setup_routes

log = logging.getLogger("podsync")
PRUNE_INTERVAL_S = 3600


async def _prune_periodically(sync: SyncService) -> None:
    """Forget action ids past their retention, now and every hour."""
    while True:
        try:
            removed = await sync.prune_action_log()
            if removed:
                log.info("forgot %d action ids past their retention", removed)
        except Exception:
            log.exception("pruning the action log failed; trying again later")
        await asyncio.sleep(PRUNE_INTERVAL_S)


async def _resources(app: web.Application) -> AsyncIterator[None]:
    config = app[CONFIG]
    db = create_engine(config.database)
    await db.open()
    passwords = PasswordService()
    pruner: asyncio.Task[None] | None = None
    try:
        secret = await load_secret_key(db, config.auth.secret_key)
        app[DB] = db
        app[AUTH] = AuthService(db, config.auth, secret, passwords)
        app[SYNC] = SyncService(db, config.sync)
        app[LISTING] = ListingService(db, secret)
        pruner = asyncio.create_task(_prune_periodically(app[SYNC]))
        yield
    finally:
        if pruner is not None:
            pruner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pruner
        await db.close()
        passwords.close()


def create_app(config: Config) -> web.Application:
    app = web.Application(
        client_max_size=config.server.max_body_bytes,
        middlewares=[
            errors_middleware,
            client_address_middleware(config.server.trusted_proxies),
            auth_middleware,
        ],
    )
    app[CONFIG] = config
    app.cleanup_ctx.append(_resources)
    setup_routes(app)
    return app
