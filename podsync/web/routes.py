"""Every route podsync serves, in one table."""

from __future__ import annotations

from aiohttp import web

from podsync.web import auth_handlers, health


def setup_routes(app: web.Application) -> None:
    app.router.add_routes(
        [
            web.get("/healthz", health.healthz, allow_head=False),
            web.post("/auth/login", auth_handlers.login),
            web.post("/auth/refresh", auth_handlers.refresh),
        ]
    )
