"""The gpodder v2 API's and the simple API's routes and services: loaded with the
first request under their paths (web/routes.py registers them lazily, with the
Nextcloud API's, web/lazy_app.py loads them)."""

from __future__ import annotations

from aiohttp import web

from podsync.web.gpodder import handlers as gpodder
from podsync.web.gpodder import subscriptions
from podsync.web.gpodder.http import gpodder_route
from podsync.web.gpodder.keys import GPODDER
from podsync.web.keys import SERVICES
from podsync.web.middleware import Handler

# The gpodder v2 API and the simple API v1 (the README's endpoint table): (method,
# path, handler, kind). Route names start "gpodder."; web/gpodder/http.py checks
# their callers.
_U = "{username}"
_D = "{device}"
_GPODDER: list[tuple[str, str, Handler, str]] = [
    ("POST", f"/api/2/auth/{_U}/login.json", gpodder.login, "login"),
    ("POST", f"/api/2/auth/{_U}/logout.json", gpodder.logout, "logout"),
    ("GET", f"/api/2/devices/{_U}.json", gpodder.list_devices, ""),
    ("POST", f"/api/2/devices/{_U}/{_D}.json", gpodder.update_device, ""),
    ("GET", f"/api/2/subscriptions/{_U}/{_D}.json", subscriptions.get_changes, ""),
    ("POST", f"/api/2/subscriptions/{_U}/{_D}.json", subscriptions.post_changes, ""),
    ("GET", f"/api/2/episodes/{_U}.json", gpodder.get_episodes, ""),
    ("POST", f"/api/2/episodes/{_U}.json", gpodder.post_episodes, ""),
    ("GET", f"/api/2/sync-devices/{_U}.json", gpodder.sync_devices, ""),
    ("POST", f"/api/2/sync-devices/{_U}.json", gpodder.sync_devices, ""),
    ("GET", f"/subscriptions/{_U}.{{fmt}}", subscriptions.get_list, ""),
    ("GET", f"/subscriptions/{_U}/{_D}.{{fmt}}", subscriptions.get_list, ""),
    ("PUT", f"/subscriptions/{_U}/{_D}.{{fmt}}", subscriptions.put_list, ""),
    ("POST", f"/subscriptions/{_U}/{_D}.{{fmt}}", subscriptions.put_list, ""),
]
GPODDER_ROUTES = [
    web.route(method, path, gpodder_route(handler, kind), name=f"gpodder.r{n}_{handler.__name__}")
    for n, (method, path, handler, kind) in enumerate(_GPODDER)
]


def open_services(app: web.Application) -> None:
    """The gpodder layer's services, over the app's (built before its first request)."""
    app[GPODDER] = app[SERVICES].gpodder
