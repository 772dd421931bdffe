"""Login Flow v2: start (`POST /index.php/login/v2`), the browser's page (a redirect
to the web UI's `Grant access` page) and the app's poll. The rules live in
services/nextcloud/login_flows.py; the grant page in web/ui/grant.py."""

from __future__ import annotations

from urllib.parse import parse_qs

from aiohttp import web
from yarl import URL

from podsync.errors import InvalidInput, NotFound, Unauthorized
from podsync.web.http import json_ok
from podsync.web.keys import APP_PASSWORDS, CLIENT_ADDRESS, LOGIN_FLOWS
from podsync.web.ops.home import server_address

POLL_PATH = "/index.php/login/v2/poll"
FLOW_PATH = "/index.php/login/v2/flow/"
GRANT_PAGE = "/ui/grant/"
NOT_YET = "no granted sign-in for this token (not yet, cancelled, expired or already used)"


async def start(request: web.Request) -> web.Response:
    started = await request.app[LOGIN_FLOWS].start(
        request.headers.get("User-Agent", ""), request[CLIENT_ADDRESS]
    )
    base = server_address(request)
    return json_ok(
        {
            "poll": {"token": started.token, "endpoint": base + POLL_PATH},
            "login": base + FLOW_PATH + started.flow_id,
        }
    )


async def open_flow(request: web.Request) -> web.StreamResponse:
    """The URL the app opens in the browser: on to the web UI, where the person signs
    in (if not yet) and grants. The UI's session cookie is kept to /ui."""
    page = GRANT_PAGE + request.match_info["flow_id"]
    address = server_address(request) + page
    try:
        URL(address)
    except ValueError:  # UnicodeError is one
        # A Host header that no URL holds ("[::1", "host:²"): the page on the host
        # the browser asked, named by its path alone.
        address = page
    raise web.HTTPSeeOther(address)


async def poll(request: web.Request) -> web.Response:
    """`token=T` as a form; 404 until granted, one 200, then 404 again. No password
    hashing here and no failed login: the token is 256 random bits."""
    raw = await request.read()
    try:
        fields = parse_qs(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=10)
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput("the body must be the form token=<poll token>") from None
    tokens = fields.get("token") or [request.query.get("token", "")]
    if not tokens[0]:
        raise InvalidInput("the body must be the form token=<poll token>")
    granted = await request.app[LOGIN_FLOWS].spend(tokens[0])
    if granted is None:
        raise NotFound(NOT_YET)
    user, app = granted
    try:
        _made, secret = await request.app[APP_PASSWORDS].create(user, app, number_if_taken=True)
    except Unauthorized:  # the user's logins ended between the grant's read and now
        raise NotFound(NOT_YET) from None
    return json_ok(
        {"server": server_address(request), "loginName": user.name, "appPassword": secret}
    )
