"""CORS for browser-based clients (`server.cors_origins`, contract section 12).

Installed only when origins are configured, so by default no CORS header is ever
sent. Outermost middleware: the error responses (a 401 for an expired token) carry
the headers too, or the browser would hide their status from the app. Tokens
travel in `Authorization`, never in cookies, so credentials mode is not allowed.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Middleware

from podsync.web.middleware import Handler, request_id_of

# The contract's four, and If-None-Match so that an app can revalidate a list page
# against its ETag itself.
ALLOWED_HEADERS = "Authorization, Content-Type, Client-ID, X-Request-ID, If-None-Match"
ALLOWED_METHODS = "GET, POST, OPTIONS"
# Headers an app's script may read from a response besides the simple ones.
EXPOSED_HEADERS = "X-Request-ID, Retry-After, WWW-Authenticate, ETag"
PREFLIGHT_MAX_AGE = "600"


def cors_middleware(origins: tuple[str, ...]) -> Middleware:
    any_origin = "*" in origins
    allowed = frozenset(origins)

    def allow_origin(origin: str | None) -> str | None:
        if origin is None:
            return None
        if any_origin:
            return "*"
        return origin if origin in allowed else None

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = allow_origin(request.headers.get("Origin"))
        if (
            origin is not None
            and request.method == "OPTIONS"
            and "Access-Control-Request-Method" in request.headers
        ):
            return _preflight(request, origin, any_origin)
        response = await handler(request)
        if origin is not None:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS
        if not any_origin:  # the answer depends on the Origin: tell caches
            response.headers.add("Vary", "Origin")
        return response

    return middleware


def _preflight(request: web.Request, origin: str, any_origin: bool) -> web.Response:
    headers = {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Methods": ALLOWED_METHODS,
        "Access-Control-Allow-Headers": ALLOWED_HEADERS,
        "Access-Control-Max-Age": PREFLIGHT_MAX_AGE,
        "X-Request-ID": request_id_of(request),
    }
    if not any_origin:
        headers["Vary"] = "Origin"
    return web.Response(status=204, headers=headers)
