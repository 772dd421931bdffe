"""Every route podsync serves, in one table."""

from __future__ import annotations

from aiohttp import web

from podsync.web import (
    auth_handlers,
    gpodder,
    gpodder_subscriptions,
    health,
    home,
    metrics,
    openapi,
    opml_export,
    subscriptions,
    sync,
)


def setup_routes(app: web.Application, gpodder_enabled: bool) -> None:
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
    if gpodder_enabled:
        app.router.add_routes(GPODDER_ROUTES)


# The gpodder v2 API (docs/gpodder in the README). Route names starting "gpodder."
# select the layer's own authentication (Basic or session cookie) instead of Bearer.
_U = "{username}"
GPODDER_ROUTES = [
    web.post(f"/api/2/auth/{_U}/login.json", gpodder.login, name="gpodder.login"),
    web.post(f"/api/2/auth/{_U}/logout.json", gpodder.logout, name="gpodder.logout"),
    web.get(f"/api/2/devices/{_U}.json", gpodder.list_devices, name="gpodder.devices"),
    web.post(f"/api/2/devices/{_U}/{{device}}.json", gpodder.update_device, name="gpodder.device"),
    web.get(f"/api/2/episodes/{_U}.json", gpodder.get_episodes, name="gpodder.episodes"),
    web.post(f"/api/2/episodes/{_U}.json", gpodder.post_episodes, name="gpodder.episodes_up"),
    web.get(f"/api/2/sync-devices/{_U}.json", gpodder.sync_devices, name="gpodder.groups"),
    web.post(f"/api/2/sync-devices/{_U}.json", gpodder.sync_devices, name="gpodder.groups_up"),
    web.get(
        f"/api/2/subscriptions/{_U}/{{device}}.json",
        gpodder_subscriptions.get_changes,
        name="gpodder.changes",
    ),
    web.post(
        f"/api/2/subscriptions/{_U}/{{device}}.json",
        gpodder_subscriptions.post_changes,
        name="gpodder.changes_up",
    ),
    # The simple API v1 (gPodder's "upload/download subscriptions" menu items).
    web.get(f"/subscriptions/{_U}.{{fmt}}", gpodder_subscriptions.get_list, name="gpodder.list"),
    web.get(
        f"/subscriptions/{_U}/{{device}}.{{fmt}}",
        gpodder_subscriptions.get_list,
        name="gpodder.device_list",
    ),
    web.put(
        f"/subscriptions/{_U}/{{device}}.{{fmt}}",
        gpodder_subscriptions.put_list,
        name="gpodder.replace",
    ),
    web.post(
        f"/subscriptions/{_U}/{{device}}.{{fmt}}",
        gpodder_subscriptions.put_list,
        name="gpodder.replace_post",
    ),
]
