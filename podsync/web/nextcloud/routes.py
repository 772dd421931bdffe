"""The Nextcloud API's and Login Flow v2's routes and services: loaded with the first
request under their paths (web/routes.py registers them lazily, with the gpodder
API's, web/lazy_app.py loads them)."""

from __future__ import annotations

from aiohttp import web

from podsync.web.keys import DEVICES, EPISODE_WRITES, LOGIN_FLOWS, NEXTCLOUD, SERVICES
from podsync.web.middleware import Handler
from podsync.web.nextcloud import login_flow, sync
from podsync.web.nextcloud.http import nextcloud_route

# The Nextcloud "GPodder Sync" API and Login Flow v2 (the nextcloud spec): (method,
# path, handler, whether it takes Basic). Route names start "nextcloud.";
# web/nextcloud/http.py checks their callers.
_NC = "/index.php/apps/gpoddersync"
_NEXTCLOUD: list[tuple[str, str, Handler, bool]] = [
    ("GET", f"{_NC}/subscriptions", sync.get_subscriptions, True),
    ("POST", f"{_NC}/subscription_change/create", sync.post_subscriptions, True),
    ("GET", f"{_NC}/episode_action", sync.get_actions, True),
    ("POST", f"{_NC}/episode_action/create", sync.post_actions, True),
    ("POST", "/index.php/login/v2", login_flow.start, False),
    ("POST", "/index.php/login/v2/poll", login_flow.poll, False),
    ("GET", "/index.php/login/v2/flow/{flow_id}", login_flow.open_flow, False),
]


def nextcloud_routes(prefix: str) -> list[web.RouteDef]:
    """Every route, its path under `prefix` ("" for none)."""
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


def open_services(app: web.Application) -> None:
    """The API's services, over the app's (built before its first request)."""
    services = app[SERVICES]
    app[NEXTCLOUD] = services.nextcloud
    app[DEVICES] = services.devices
    app[EPISODE_WRITES] = services.episode_writes
    app[LOGIN_FLOWS] = services.login_flows
