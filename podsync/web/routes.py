"""Every route podsync serves, in one table."""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from podsync.web.gpodder import handlers as gpodder
from podsync.web.gpodder import slashes
from podsync.web.gpodder import subscriptions as gpodder_subscriptions
from podsync.web.gpodder.http import gpodder_route
from podsync.web.lazy_app import LazyApp, LazyPart
from podsync.web.middleware import Handler
from podsync.web.nextcloud import login_flow as nextcloud_flow
from podsync.web.nextcloud import sync as nextcloud
from podsync.web.nextcloud.http import nextcloud_route
from podsync.web.opa import auth as auth_handlers
from podsync.web.opa import openapi, opml_export, subscriptions, sync
from podsync.web.ops import health, home


def setup_routes(
    app: web.Application,
    gpodder_enabled: bool,
    metrics_enabled: bool = False,
    public_url: str = "",
) -> None:
    if metrics_enabled:  # prometheus-client (the `metrics` extra) is loaded only then
        from podsync.web.ops.prometheus import metrics_page
    else:
        from podsync.web.ops.metrics import metrics_off as metrics_page
    app.router.add_routes(
        [
            web.get("/", home.home, allow_head=False),
            web.get("/healthz", health.healthz),  # HEAD too, for load balancers
            web.post("/auth/login", auth_handlers.login),
            web.post("/auth/refresh", auth_handlers.refresh),
            web.get(
                "/api/v1/subscriptions",
                subscriptions.list_subscriptions,
                allow_head=False,
            ),
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
            web.get("/metrics", metrics_page, allow_head=False),
        ]
    )
    if gpodder_enabled:
        app.router.register_resource(slashes.RepeatedSlashes(app.router, GPODDER_PREFIXES))
        app.router.add_routes(GPODDER_ROUTES)
        app.router.add_routes(nextcloud_routes(""))
        # Behind a proxy that passes its path prefix on (server.public_url
        # https://host/podsync), the same routes under the prefix too.
        prefix = urlsplit(public_url).path.rstrip("/") if public_url else ""
        if prefix:
            app.router.add_routes(nextcloud_routes(prefix))
    # The web UI, built on its first request (web/lazy_app.py): a server whose pages
    # nobody opens never loads them, nor the services only they use.
    LazyApp(app, ("/ui",), ("/favicon.ico",), _load_ui).register()


def _load_ui() -> LazyPart:
    from podsync.web.ui import routes as ui

    return LazyPart(ui.ui_app, ui.open_services)


# The gpodder v2 API and the simple API v1 (the README's endpoint table): (method,
# path, handler, kind). Under these prefixes repeated slashes route as one (Kasts
# with a trailing "/" typed after the host sends "//api/2/..."), not by a redirect.
# Route names start "gpodder."; web/gpodder/http.py checks their callers.
GPODDER_PREFIXES = ("/api/2/", "/subscriptions/")
_U = "{username}"
_D = "{device}"
_GPODDER: list[tuple[str, str, Handler, str]] = [
    ("POST", f"/api/2/auth/{_U}/login.json", gpodder.login, "login"),
    ("POST", f"/api/2/auth/{_U}/logout.json", gpodder.logout, "logout"),
    ("GET", f"/api/2/devices/{_U}.json", gpodder.list_devices, ""),
    ("POST", f"/api/2/devices/{_U}/{_D}.json", gpodder.update_device, ""),
    ("GET", f"/api/2/subscriptions/{_U}/{_D}.json", gpodder_subscriptions.get_changes, ""),
    ("POST", f"/api/2/subscriptions/{_U}/{_D}.json", gpodder_subscriptions.post_changes, ""),
    ("GET", f"/api/2/episodes/{_U}.json", gpodder.get_episodes, ""),
    ("POST", f"/api/2/episodes/{_U}.json", gpodder.post_episodes, ""),
    ("GET", f"/api/2/sync-devices/{_U}.json", gpodder.sync_devices, ""),
    ("POST", f"/api/2/sync-devices/{_U}.json", gpodder.sync_devices, ""),
    ("GET", f"/subscriptions/{_U}.{{fmt}}", gpodder_subscriptions.get_list, ""),
    ("GET", f"/subscriptions/{_U}/{_D}.{{fmt}}", gpodder_subscriptions.get_list, ""),
    ("PUT", f"/subscriptions/{_U}/{_D}.{{fmt}}", gpodder_subscriptions.put_list, ""),
    ("POST", f"/subscriptions/{_U}/{_D}.{{fmt}}", gpodder_subscriptions.put_list, ""),
]
GPODDER_ROUTES = [
    web.route(method, path, gpodder_route(handler, kind), name=f"gpodder.r{n}_{handler.__name__}")
    for n, (method, path, handler, kind) in enumerate(_GPODDER)
]


# The Nextcloud "GPodder Sync" API and Login Flow v2 (the nextcloud spec): (method,
# path, handler, whether it takes Basic). Route names start "nextcloud.";
# web/nextcloud/http.py checks their callers.
_NC = "/index.php/apps/gpoddersync"
_NEXTCLOUD: list[tuple[str, str, Handler, bool]] = [
    ("GET", f"{_NC}/subscriptions", nextcloud.get_subscriptions, True),
    ("POST", f"{_NC}/subscription_change/create", nextcloud.post_subscriptions, True),
    ("GET", f"{_NC}/episode_action", nextcloud.get_actions, True),
    ("POST", f"{_NC}/episode_action/create", nextcloud.post_actions, True),
    ("POST", "/index.php/login/v2", nextcloud_flow.start, False),
    ("POST", "/index.php/login/v2/poll", nextcloud_flow.poll, False),
    ("GET", "/index.php/login/v2/flow/{flow_id}", nextcloud_flow.open_flow, False),
]


def nextcloud_routes(prefix: str) -> list[web.RouteDef]:
    tag = "p" if prefix else ""
    return [
        web.route(
            method,
            prefix + path,
            nextcloud_route(handler, basic),
            name=f"nextcloud.{tag}r{n}_{handler.__name__}",
        )
        for n, (method, path, handler, basic) in enumerate(_NEXTCLOUD)
    ]
