"""Every route podsync serves, in one table."""

from __future__ import annotations

from aiohttp import web

from podsync.web import (
    auth_handlers,
    health,
    home,
    metrics,
    openapi,
    opml_export,
    subscriptions,
    sync,
)


def setup_routes(app: web.Application) -> None:
    app.router.add_routes(
        [
            web.get("/", home.home, allow_head=False),
            web.get("/healthz", health.healthz),  # HEAD too, for load balancers
            web.post("/auth/login", auth_handlers.login),
            web.post("/auth/refresh", auth_handlers.refresh),
            web.get("/api/v1/subscriptions", subscriptions.list_subscriptions, allow_head=False),
            web.get(
                "/api/v1/subscriptions.opml",
                opml_export.export_subscriptions,
                allow_head=False,
            ),
            web.get(
                "/api/v1/subscriptions/{sync_id}",
                subscriptions.get_subscription,
                allow_head=False,
            ),
            web.post("/api/v1/sync", sync.post_batch),
            web.get("/api/v1/sync", sync.get_changes, allow_head=False),
            web.get("/api/v1/openapi.json", openapi.openapi, allow_head=False),
            # 404 unless server.metrics is on
            web.get("/metrics", metrics.metrics_page, allow_head=False),
        ]
    )
