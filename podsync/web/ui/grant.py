"""The browser's page of Login Flow v2 (the Nextcloud API's sign-in for apps such as
AntennaPod): after the web UI's sign-in, `Grant access` or `Cancel` for the app the
flow's User-Agent names (what the app says it is: nothing verifies it), with the
address that started the sign-in and when, so a person can tell a request they did
not make. An ordinary UI form (session, CSRF token, Origin check in
web/ui/guard.py); the app's poll then gets a new app password
(services/nextcloud/login_flows.py)."""

from __future__ import annotations

import logging

from aiohttp import web

from podsync.errors import NotFound
from podsync.services.auth import loggable_name
from podsync.web.keys import CLIENT_ADDRESS, LOGIN_FLOWS
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import SIGNED_IN
from podsync.web.ui.render import Moment, render, user_zone

log = logging.getLogger("podsync.ui")
GONE = (
    "This sign-in request is unknown, was already answered or has expired (after 20 "
    "minutes). Start the sign-in again in the app."
)


async def grant_page(request: web.Request) -> web.Response:
    pending = await request.app[LOGIN_FLOWS].pending(request.match_info["flow_id"])
    if pending is None:
        raise NotFound(GONE)
    return render(
        request,
        "grant.html",
        "Grant access",
        app=pending.app,
        flow_id=pending.flow_id,
        address=pending.address,
        here=request[CLIENT_ADDRESS],
        started=Moment(pending.started_at, user_zone(request)),
        done="",
    )


async def decide(request: web.Request) -> web.Response:
    flows = request.app[LOGIN_FLOWS]
    flow_id = request.match_info["flow_id"]
    pending = await flows.pending(flow_id)
    grant = form_text(request, "decision", 20) == "grant"
    user = request[SIGNED_IN].user
    if pending is None or not await flows.decide(flow_id, user, grant):
        raise NotFound(GONE)
    if grant:
        log.info("user %s granted a sign-in to %s", loggable_name(user.name), pending.app)
        done = "Access granted"
        message = f"Return to {pending.app}: it finishes signing in by itself."
    else:
        done = "Cancelled"
        message = f"{pending.app} was not given access. You can close this page."
    return render(request, "grant.html", done, app=pending.app, done=done, message=message)
