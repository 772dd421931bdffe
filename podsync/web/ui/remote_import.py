"""The Import and export page's "Import from another server" form.

The POST signs in to the other server while the person waits (a refused password is
shown at its field), then runs the import as a job in the background and answers
303 to the page, which shows the job: its progress while it runs (with Cancel), its
report when it ended. The job's state lives in the database, so the page shows it
from any process, and reloading it reloads a GET, never the import.
"""

from __future__ import annotations

import logging

from aiohttp import web

from podsync.errors import TooManyRequests
from podsync.services.auth import loggable_name
from podsync.services.feeds.refusals import IMPORT_NOT_ALLOWED
from podsync.services.remote_import import (
    RemoteAccount,
    RemoteError,
    RemoteRefusedAddress,
    RemoteUnauthorized,
)
from podsync.services.remote_import.client import APIS, base_url
from podsync.services.remote_import.jobs import ImportRunning, ImportThrottled
from podsync.web.keys import CONFIG
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import IMPORT_JOBS, SIGNED_IN
from podsync.web.ui.transfer import transfer_page

log = logging.getLogger("podsync.ui")
MAX_ID_DIGITS = 18  # any id a database makes, and never past a 64-bit integer


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
        return await transfer_page(request, errors, status=400, remote=values)
    account = RemoteAccount(url, username, password, api or None)  # type: ignore[arg-type]
    # An admin may reach a server on the home network; others, public addresses only
    # unless the admin opened private ones to everyone ([feeds] allow_private).
    allow_private = request.app[CONFIG].feeds.allow_private or user.admin
    try:
        job_id = await request.app[IMPORT_JOBS].start(user, account, allow_private=allow_private)
    except ImportThrottled as exc:
        message = f"Not sent: {exc}. Nothing was changed."
        field = {"remote_password": message}
        page = await transfer_page(request, field, status=429, remote=values)
        page.headers["Retry-After"] = str(exc.retry_after)
        return page
    except ImportRunning as exc:
        message = f"Not started: {exc}."
        return await transfer_page(request, {"url": message}, status=409, remote=values)
    except RemoteUnauthorized as exc:
        message = f"That server refused this user name and password ({exc}). Nothing was changed."
        field = {"remote_password": message}
        return await transfer_page(request, field, status=400, remote=values)
    except RemoteRefusedAddress as exc:
        # Only a non-admin is refused an address (an admin may reach any): told that
        # it is not allowed, never which address the name resolves to; the log has it.
        log.info("user %s: import refused: %s", loggable_name(user.name), exc.reason)
        return await transfer_page(request, {"url": IMPORT_NOT_ALLOWED}, status=403, remote=values)
    except TooManyRequests as exc:  # the person's fetches a minute
        page = await transfer_page(request, {"url": f"Not sent: {exc}"}, status=429, remote=values)
        page.headers["Retry-After"] = str(exc.retry_after)
        return page
    except RemoteError as exc:
        message = f"Nothing could be read: {exc}. Nothing was changed."
        return await transfer_page(request, {"url": message}, status=502, remote=values)
    log.info(
        "user %s started import %d from another server in the web UI",
        loggable_name(user.name),
        job_id,
    )
    raise web.HTTPSeeOther(f"/ui/transfer?import={job_id}#h-remote-report")


async def cancel_import(request: web.Request) -> web.Response:
    """Ask the import named in the form to stop; back to the page that shows it."""
    user = request[SIGNED_IN].user
    raw = form_text(request, "import", MAX_ID_DIGITS + 1)
    job_id = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= MAX_ID_DIGITS else 0
    await request.app[IMPORT_JOBS].ask_to_stop(user.id, job_id)
    raise web.HTTPSeeOther(f"/ui/transfer?import={job_id}#h-remote-report")
