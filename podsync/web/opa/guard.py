"""The Open Podcast API's authentication: every route of it but login, refresh and
the OpenAPI document needs a valid access token, `Authorization: Bearer <token>`.

`bearer_route` wraps each such handler (web/routes.py), as the gpodder, Nextcloud
and web UI folders wrap theirs: a refusal is an Unauthorized, answered 401 with the
Bearer challenge by the middleware (web/errors.py). Unknown paths and wrong methods
reach no handler, so they answer 404 and 405, not 401.
"""

from __future__ import annotations

import functools

from aiohttp import web

from podsync.errors import Unauthorized
from podsync.web.keys import AUTH, USER
from podsync.web.middleware import Handler


def bearer_token(request: web.Request) -> str:
    header = request.headers.get("Authorization")
    if header is None:
        raise Unauthorized("missing Authorization header; send Authorization: Bearer <token>")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if not token or scheme.lower() != "bearer":
        raise Unauthorized("Authorization header must use the Bearer scheme")
    return token


def bearer_route(handler: Handler) -> Handler:
    """`handler` for the caller of a valid access token (`request[USER]`)."""

    @functools.wraps(handler)
    async def opa_handler(request: web.Request) -> web.StreamResponse:
        request[USER] = await request.app[AUTH].authenticate(bearer_token(request))
        return await handler(request)

    return opa_handler
