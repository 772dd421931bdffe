"""The Import and export page's "Import from another server" form.

The POST runs the import (remote calls awaited on the event loop, writes in short
transactions between them, decoding and parsing in a thread), keeps the report for
a while and answers 303 to the page with the report's id: reloading the result
reloads a GET, never the import (post/redirect/get).
"""

from __future__ import annotations

import logging

from aiohttp import web

from podsync.services.auth import loggable_name
from podsync.services.remote_import import (
    RemoteAccount,
    RemoteError,
    RemoteUnauthorized,
)
from podsync.services.remote_import.client import APIS, base_url
from podsync.web.keys import CONFIG
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import IMPORT_REPORTS, REMOTE_IMPORT, SIGNED_IN
from podsync.web.ui.transfer import transfer_page

log = logging.getLogger("podsync.ui")


async def import_from_server(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    url = form_text(request, "url", 2048).strip()
    username = form_text(request, "username", 256).strip()
    password = form_text(request, "password", 4096)
    api = form_text(request, "api", 16)
    values = {"url": url, "username": username, "api": api}
    errors: dict[str, str] = {}
    try:
        base_url(url)
    except ValueError as exc:
        errors["url"] = f"Give the server's address: {exc}."
    if not username:
        errors["username"] = "Give your user name on that server."
    if not password:
        message = "Give your password (or an app password) on that server."
        errors["remote_password"] = message
    if api not in ("", *APIS):
        errors["api"] = "Choose one of the APIs offered."
    if errors:
        return transfer_page(request, errors, status=400, remote=values)
    account = RemoteAccount(url, username, password, api or None)  # type: ignore[arg-type]
    allow_private = request.app[CONFIG].feeds.allow_private
    try:
        report = await request.app[REMOTE_IMPORT].import_from(
            user, account, allow_private=allow_private
        )
    except RemoteUnauthorized as exc:
        message = f"That server refused this user name and password ({exc}). Nothing was changed."
        return transfer_page(request, {"remote_password": message}, status=400, remote=values)
    except RemoteError as exc:
        message = f"Nothing could be read: {exc}. Nothing was changed."
        return transfer_page(request, {"url": message}, status=502, remote=values)
    log.info(
        "user %s imported from another server in the web UI: %d feeds and %d episode "
        "actions added%s",
        loggable_name(user.name),
        report.feeds_added + report.feeds_resubscribed,
        report.actions_added,
        "" if report.complete else " (stopped half way)",
    )
    key = request.app[IMPORT_REPORTS].keep(user.id, report)
    raise web.HTTPSeeOther(f"/ui/transfer?imported={key}#h-remote-report")
