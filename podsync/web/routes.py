"""Every route podsync serves: the Open Podcast API's and the operations' in one
table here; the gpodder-compatible APIs' (web/gpodder/routes.py,
web/nextcloud/routes.py) and the web UI's (web/ui/routes.py) in their folders,
each registered here as a part loaded with its first request (web/lazy_app.py)."""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from podsync.web.gpodder import slashes
from podsync.web.lazy_app import LazyApp, LazyPart
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
        # The gpodder-compatible APIs, built on their first request (`_load_gpodder_apis`).
        # Behind a proxy that passes its path prefix on (server.public_url
        # https://host/podsync), the Nextcloud routes under the prefix too.
        prefix = urlsplit(public_url).path.rstrip("/") if public_url else ""
        LazyApp(
            app, _gpodder_prefixes(prefix), (), lambda: _load_gpodder_apis(prefix), pages=False
        ).register()
        app.router.register_resource(slashes.RepeatedSlashes(app.router, GPODDER_PREFIXES))
    # The web UI, built on its first request (web/lazy_app.py): a server whose pages
    # nobody opens never loads them, nor the services only they use.
    LazyApp(app, ("/ui",), ("/favicon.ico",), _load_ui).register()


# Under these prefixes repeated slashes route as one (Kasts with a trailing "/" typed
# after the host sends "//api/2/..."), not by a redirect (web/gpodder/slashes.py).
GPODDER_PREFIXES = ("/api/2/", "/subscriptions/")
# The Nextcloud API's and Login Flow v2's paths start so.
NEXTCLOUD_PREFIXES = ("/index.php/apps/gpoddersync", "/index.php/login/v2")


def _gpodder_prefixes(path_prefix: str) -> tuple[str, ...]:
    """Every path prefix of the gpodder-compatible APIs (each covers itself and what
    is below it), the Nextcloud ones also under the path of server.public_url."""
    under = tuple(path_prefix + p for p in NEXTCLOUD_PREFIXES) if path_prefix else ()
    return (*(p.rstrip("/") for p in GPODDER_PREFIXES), *NEXTCLOUD_PREFIXES, *under)


def _load_gpodder_apis(path_prefix: str) -> LazyPart:
    """The gpodder-compatible APIs as one part: the gpodder v2 and simple APIs, the
    Nextcloud API and Login Flow v2. `gpodder.enabled` turns them on together and the
    Nextcloud sync stands on the gpodder subscriptions; with them come the services
    only they use (the episode core, the devices, the served positions), about 0.7 MB
    that a server whose apps speak only the Open Podcast API never holds. The
    Nextcloud routes are also under `path_prefix` (the path of server.public_url)."""
    from podsync.web.gpodder import routes as gpodder
    from podsync.web.nextcloud import routes as nextcloud

    def apis() -> web.Application:
        app = web.Application()
        app.router.add_routes(gpodder.GPODDER_ROUTES)
        app.router.add_routes(nextcloud.nextcloud_routes(""))
        if path_prefix:
            app.router.add_routes(nextcloud.nextcloud_routes(path_prefix))
        return app

    def open_services(app: web.Application) -> None:
        gpodder.open_services(app)
        nextcloud.open_services(app)

    return LazyPart(apis, open_services)


def _load_ui() -> LazyPart:
    from podsync.web.ui import routes as ui

    return LazyPart(ui.ui_app, ui.open_services)
