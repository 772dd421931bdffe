"""create_app(config) -> web.Application: resources, middleware, routes."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from podsync.config import Config
from podsync.db import Database
from podsync.services.auth import AuthService, load_secret_key
from podsync.services.passwords import PasswordService
from podsync.web.keys import AUTH, CONFIG, DB
from podsync.web.middleware import auth_middleware, client_address_middleware, errors_middleware
from podsync.web.routes import setup_routes


async def _resources(app: web.Application) -> AsyncIterator[None]:
    config = app[CONFIG]
    db = Database(config.database.path, config.database.durability)
    await db.open()
    passwords = PasswordService()
    try:
        secret = await load_secret_key(db, config.auth.secret_key)
        app[DB] = db
        app[AUTH] = AuthService(db, config.auth, secret, passwords)
        yield
    finally:
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
