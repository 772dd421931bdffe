"""Transport and authentication of the gpodder layer (gpodder spec sections 2 and 3).

`gpodder_route` wraps each handler of the layer (not a middleware: the OPA routes
pay no extra stack frame, and a deeply nested JSON body still parses):
- Basic or the session cookie; when an Authorization header is present it alone
  decides. A successful Basic call that carried no valid cookie gets one, which
  keeps mygpoclient alive past its three-challenge budget.
- `Cache-Control: no-store` on every answer, and a 401 challenges
  `Basic realm="podsync"` (urllib, inside gPodder, retries only on that challenge
  and raises on a Bearer one).
- A write that a browser marks as made by a page of another site is a 403 before
  authentication, whatever credentials it carries: a browser that once answered
  the Basic prompt sends those credentials to any page's form post, as it does the
  cookie (contract section 15, `web/origin.py`).
Repeated slashes (Kasts turns a typed trailing `/` into `//api/2/...`) are routed
as one by `web/slashes.py`, without a redirect.
"""

from __future__ import annotations

import functools
from typing import Any

from aiohttp import web

from podsync.errors import Forbidden, InvalidInput, TooManyRequests, Unauthorized
from podsync.services.gpodder import Gpodder
from podsync.services.gpodder.auth import Session
from podsync.web.errors import basic_refusal
from podsync.web.gpodder.keys import GPODDER
from podsync.web.http import basic_credentials, login_caller, note_refusal
from podsync.web.keys import CONFIG, GPODDER_SESSION, SYNC_HEALTH, USER
from podsync.web.middleware import Handler, checks_own_callers, is_trusted_proxy
from podsync.web.origin import refuse_foreign_write

COOKIE = "sessionid"
CHALLENGE = 'Basic realm="podsync", charset="UTF-8"'
NEED_CREDENTIALS = "send Basic credentials or the session cookie of a login"


async def _cookie_session(gp: Gpodder, request: web.Request) -> Session | None:
    value = request.cookies.get(COOKIE)
    if not value:
        return None
    try:
        return await gp.auth.from_cookie(value)
    except Unauthorized:
        return None


def _is_https(request: web.Request) -> bool:
    if request.secure:
        return True
    proxies = request.app[CONFIG].server.trusted_proxies
    forwarded = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    return forwarded == "https" and is_trusted_proxy(request.remote or "", proxies)


def set_session_cookie(request: web.Request, response: web.StreamResponse, value: str) -> None:
    """Path=/ (else OkHttp keeps it to the login URL's directory), no Domain (a
    host-only cookie, which ACCEPT_ORIGINAL_SERVER always takes), Secure only when
    the client speaks https (a Secure cookie is never sent over http), Max-Age rather
    than an absolute Expires (a phone's clock may be off)."""
    response.set_cookie(
        COOKIE,
        value,
        max_age=request.app[CONFIG].gpodder.session_lifetime,
        path="/",
        httponly=True,
        samesite="Lax",
        secure=_is_https(request),
    )


async def _authenticate(
    request: web.Request, gp: Gpodder
) -> tuple[Session | None, Any, bool, int | None]:
    """(cookie session or None, user, whether a new cookie is due, the app password
    the credentials used)."""
    cookie_session = await _cookie_session(gp, request)
    header = request.headers.get("Authorization")
    if header is None:
        if cookie_session is None:
            raise Unauthorized(NEED_CREDENTIALS)  # not a failure: urllib asks first
        refresh = gp.auth.needs_refresh(cookie_session)
        return cookie_session, cookie_session.user, refresh, cookie_session.app_password_id
    name, password = basic_credentials(header)
    login = await gp.auth.login_basic(name, password, login_caller(request, "gpodder"))
    user = login.user
    app_password_id = None if login.app_password is None else login.app_password.id
    if (
        cookie_session is not None
        and cookie_session.user.id == user.id
        and cookie_session.app_password_id == app_password_id
    ):
        return cookie_session, user, gp.auth.needs_refresh(cookie_session), app_password_id
    return None, user, True, app_password_id


def gpodder_route(handler: Handler, kind: str = "") -> Handler:
    """`handler` behind the layer's authentication and transport rules. `kind` is
    "login" (a user mismatch is a 400, as the gpodder docs say) or "logout" (always
    succeeds, with or without valid credentials)."""

    @functools.wraps(handler)
    async def gpodder_handler(request: web.Request) -> web.StreamResponse:
        try:
            response = await _authenticated(request, handler, kind)
        except (Unauthorized, Forbidden) as exc:
            response = basic_refusal(exc, CHALLENGE)
        response.headers["Cache-Control"] = "no-store"
        return response

    return checks_own_callers(gpodder_handler)


async def _authenticated(request: web.Request, handler: Handler, kind: str) -> web.StreamResponse:
    gp = request.app[GPODDER]
    refuse_foreign_write(request)  # before the credentials: never a failed login
    try:
        session, user, new_cookie, app_password_id = await _authenticate(request, gp)
    except (Unauthorized, TooManyRequests) as exc:
        await note_refusal(request, "gpodder", request.match_info.get("device"), exc)
        if kind == "logout" and isinstance(exc, Unauthorized):  # always succeeds (spec 5.2)
            return await handler(request)
        raise
    if request.match_info.get("username") != user.name:
        # Never serve another user's data; the docs want 400 on login.json.
        if kind == "login":
            raise InvalidInput("the username in the URL is not the authenticated user")
        raise Unauthorized("the username in the URL is not the authenticated user")
    value = None
    if session is not None and not new_cookie:
        session_id = session.session_id
    else:
        value, session_id = gp.auth.issue_cookie(
            user, session.session_id if session is not None else None, app_password_id
        )
    request[USER] = user
    request[GPODDER_SESSION] = session_id
    response = await handler(request)
    device = request.match_info.get("device")
    if device is not None and response.status < 300:
        await request.app[SYNC_HEALTH].synced(user.id, device)
    if value is not None and kind != "logout" and response.status == 200:
        set_session_cookie(request, response, value)
    return response
