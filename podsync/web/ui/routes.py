"""The web UI's routes, all under /ui/, in one table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from podsync.services.compose.rare import RareServices
from podsync.services.feeds.chapters import ChapterCache
from podsync.web.keys import ERROR_PAGE, LOGIN_FLOWS, SERVICES
from podsync.web.middleware import checks_own_callers
from podsync.web.ui import (
    account,
    admin,
    app_passwords,
    artwork,
    bulk,
    chapters,
    devices,
    episodes,
    grant,
    inbox,
    listening,
    lockout,
    pages,
    player,
    remote_import,
    search,
    stats,
    time_zone,
    transfer,
    up_next,
)
from podsync.web.ui.guard import Handler, error_page, page_for_error, ui_route
from podsync.web.ui.keys import (
    ACCOUNTS,
    BROWSE,
    CHAPTERS,
    EPISODE_PAGES,
    EPISODE_SEARCH,
    FAVICON,
    IMPORT_JOBS,
    INBOX,
    LISTENING,
    LISTENING_STATS,
    OPML,
    PLAYER_SETTINGS,
    STATIC,
    STYLESHEET,
    UP_NEXT,
    UP_NEXT_SCRIPT,
    WEB_LISTENING,
    WEB_SESSIONS,
)
from podsync.web.ui.render import (
    FAVICON_FILE,
    STATIC_CSS,
    STATIC_FILES,
    static_file,
    stylesheet,
)

# (method, path, handler, options). Route names start "ui."; the UI's own
# session rules (web/ui/guard.py) check their callers.
_UI: list[tuple[str, str, Handler, dict[str, bool]]] = [
    ("GET", "/ui/login", account.login_form, {"public": True}),
    ("POST", "/ui/login", account.login, {"public": True}),
    ("POST", "/ui/logout", account.logout, {}),
    ("GET", "/ui/", pages.overview, {}),
    ("GET", "/ui", pages.overview, {}),
    ("GET", "/ui/subscriptions", pages.subscriptions, {}),
    ("POST", "/ui/subscriptions", pages.subscribe, {}),
    ("POST", "/ui/subscriptions/unsubscribe", pages.unsubscribe, {}),
    ("POST", "/ui/subscriptions/resubscribe", pages.resubscribe, {}),
    ("POST", "/ui/subscriptions/refresh", pages.refresh, {}),
    ("GET", "/ui/podcasts/{sync_id}", listening.podcast, {}),
    ("GET", "/ui/artwork/{digest}", artwork.artwork, {"no_count": True}),
    ("POST", "/ui/episodes/mark", episodes.mark, {}),
    ("POST", "/ui/episodes/mark-many", bulk.mark_many, {}),
    ("GET", "/ui/new", inbox.page, {}),
    ("POST", "/ui/new/dismiss", inbox.dismiss, {}),
    ("GET", "/ui/up-next", up_next.page, {}),
    ("GET", "/ui/up-next/next", up_next.next_episode, {"no_count": True}),
    ("POST", "/ui/up-next/add", up_next.add, {}),
    ("POST", "/ui/up-next/remove", up_next.remove, {}),
    ("POST", "/ui/up-next/move", up_next.move, {}),
    ("POST", "/ui/up-next/autoplay", up_next.set_autoplay, {}),
    ("GET", "/ui/episodes/{ref}", episodes.episode_page, {}),
    ("POST", "/ui/episodes/{ref}/progress", episodes.progress, {}),
    ("GET", "/ui/episodes/{ref}/player.json", player.player_json, {}),
    ("GET", "/ui/episodes/{ref}/chapters.json", chapters.chapters_json, {}),
    ("POST", "/ui/episodes/{ref}/speed", player.set_speed, {}),
    ("POST", "/ui/continue/remove", player.remove_from_continue, {}),
    ("GET", "/ui/search", search.search, {}),
    ("GET", "/ui/stats", stats.stats, {}),
    ("GET", "/ui/history", listening.history, {}),
    ("GET", "/ui/devices", devices.devices, {}),
    ("POST", "/ui/devices/rename", devices.rename_device, {}),
    ("POST", "/ui/devices/remove", devices.remove_device, {}),
    ("GET", "/ui/transfer", transfer.transfer, {}),
    ("POST", "/ui/import", account.import_opml, {"reads_own_body": True}),
    ("POST", "/ui/import-from", remote_import.import_from_server, {}),
    ("POST", "/ui/import-from/cancel", remote_import.cancel_import, {}),
    ("GET", "/ui/export.opml", account.export_opml, {"no_count": True}),
    ("GET", "/ui/account", account.account, {}),
    ("POST", "/ui/account/password", account.change_password, {}),
    ("POST", "/ui/account/logout-everywhere", account.logout_everywhere, {}),
    ("POST", "/ui/account/unlock", lockout.unlock_own_name, {}),
    ("POST", "/ui/account/time-zone", time_zone.set_time_zone, {}),
    ("POST", "/ui/account/app-passwords", app_passwords.create, {}),
    ("GET", "/ui/account/app-passwords/revoke", app_passwords.confirm_revoke, {}),
    ("POST", "/ui/account/app-passwords/revoke", app_passwords.revoke, {}),
    ("GET", "/ui/grant/{flow_id}", grant.grant_page, {}),
    ("POST", "/ui/grant/{flow_id}", grant.decide, {}),
    ("GET", "/ui/admin/users", admin.users, {"admin": True}),
    ("POST", "/ui/admin/users", admin.add_user, {"admin": True}),
    ("GET", "/ui/admin/user", admin.user_page, {"admin": True}),
    ("POST", "/ui/admin/users/disable", admin.disable_user, {"admin": True}),
    ("POST", "/ui/admin/users/enable", admin.enable_user, {"admin": True}),
    ("POST", "/ui/admin/users/unlock", admin.unlock_user, {"admin": True}),
    ("POST", "/ui/admin/users/password", admin.reset_password, {"admin": True}),
    ("POST", "/ui/admin/users/delete", admin.delete_user, {"admin": True}),
]


def _constant(
    key: web.AppKey[bytes], content_type: str, max_age: int, charset: str | None = None
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A handler for one of the UI's constant files (read once, kept in the app):
    the style sheet, the player script (the UI's one script, same-origin), the tab
    icon every browser asks for at /favicon.ico."""
    headers = {"Cache-Control": f"public, max-age={max_age}", "X-Content-Type-Options": "nosniff"}

    async def answer(request: web.Request) -> web.Response:
        body = request.app[key]
        return web.Response(body=body, content_type=content_type, charset=charset, headers=headers)

    return checks_own_callers(answer)  # anyone's: the sign-in page needs them


_stylesheet = _constant(STYLESHEET, "text/css", 86400, "utf-8")
_favicon = _constant(FAVICON, "image/vnd.microsoft.icon", 604800)
_up_next_script = _constant(UP_NEXT_SCRIPT, "text/javascript", 86400, "utf-8")


def _static(
    name: str, content_type: str, charset: str | None
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A handler for one of STATIC_FILES (read once at start, kept in the app)."""
    headers = {"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"}

    async def answer(request: web.Request) -> web.Response:
        body = request.app[STATIC][name]
        return web.Response(body=body, content_type=content_type, charset=charset, headers=headers)

    return checks_own_callers(answer)  # anyone's: the manifest and icons are public too


async def _not_found(request: web.Request) -> web.Response:
    return error_page(request, 404, "Not found", "There is no such page.")


def open_services(app: web.Application) -> None:
    """The UI's services, over the app's (open before the first page)."""
    rare = RareServices(app[SERVICES])
    app[LOGIN_FLOWS] = app[SERVICES].login_flows  # the grant page of Login Flow v2
    app[ACCOUNTS] = rare.accounts
    app[WEB_SESSIONS] = rare.web_sessions
    app[BROWSE] = rare.browse
    app[LISTENING] = rare.listening
    app[EPISODE_PAGES] = rare.episode_pages
    app[EPISODE_SEARCH] = rare.episode_search
    app[INBOX] = rare.inbox
    app[UP_NEXT] = rare.up_next
    app[LISTENING_STATS] = rare.listening_stats
    app[WEB_LISTENING] = rare.web_listening
    app[PLAYER_SETTINGS] = rare.player_settings
    app[CHAPTERS] = ChapterCache()
    app[OPML] = rare.opml
    app[IMPORT_JOBS] = rare.import_jobs


async def _stop_imports(app: web.Application) -> None:
    """On shutdown, before the database closes: imports running here stop and write
    their reports (they would otherwise hold the shutdown until their end)."""
    if IMPORT_JOBS in app:
        await app[IMPORT_JOBS].shutdown()


def ui_app() -> web.Application:
    """The web UI's application: its routes, style sheet and error page, built on the
    first request under /ui/ (web/routes.py registers it, web/lazy_app.py loads it;
    its services come with `open_services`, over the main application's state)."""
    app = web.Application()
    app.on_shutdown.append(_stop_imports)
    app[STYLESHEET] = stylesheet()
    app[FAVICON] = static_file(FAVICON_FILE)
    app[STATIC] = {name: static_file(name) for name, _, _ in STATIC_FILES}
    app[UP_NEXT_SCRIPT] = static_file(up_next.UP_NEXT_JS)
    app[ERROR_PAGE] = page_for_error
    routes = [
        web.route(method, path, ui_route(handler, **options), name=f"ui.r{n}_{handler.__name__}")
        for n, (method, path, handler, options) in enumerate(_UI)
    ]
    routes.append(
        web.get(f"/ui/static/{STATIC_CSS}", _stylesheet, name="ui.static", allow_head=False)
    )
    routes += [
        web.get(
            f"/ui/static/{name}", _static(name, kind, charset), name=f"ui.s{n}", allow_head=False
        )
        for n, (name, kind, charset) in enumerate(STATIC_FILES)
    ]
    routes.append(
        web.get(
            f"/ui/static/{up_next.UP_NEXT_JS}",
            _up_next_script,
            name="ui.up_next_script",
            allow_head=False,
        )
    )
    routes.append(web.get("/favicon.ico", _favicon, name="ui.favicon", allow_head=False))
    routes.append(
        web.get("/ui/{tail:.*}", ui_route(_not_found), name="ui.not_found", allow_head=False)
    )
    app.router.add_routes(routes)
    return app
