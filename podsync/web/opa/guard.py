"""The Open Podcast API's authentication: every route of it but login, refresh and
the OpenAPI document needs a valid access token, `Authorization: Bearer <token>`.

`check_bearer` is the middleware's guard (web/app.py passes it): it checks the
caller of every route that is not public and whose protocol does not check its
own (the gpodder, Nextcloud and web UI wrappers), so a new route is protected
unless said otherwise. A refusal is an Unauthorized, answered 401 with the Bearer
challenge by the middleware (web/errors.py).
"""

from __future__ import annotations

from aiohttp import web

from podsync.errors import Unauthorized
from podsync.web.keys import AUTH, USER


def bearer_token(request: web.Request) -> str:
    header = request.headers.get("Authorization")
    if header is None:
        raise Unauthorized("missing Authorization header; send Authorization: Bearer <token>")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if not token or scheme.lower() != "bearer":
        raise Unauthorized("Authorization header must use the Bearer scheme")
    return token


async def check_bearer(request: web.Request) -> None:
    """The caller of a valid access token, as `request[USER]`; else Unauthorized."""
    request[USER] = await request.app[AUTH].authenticate(bearer_token(request))
