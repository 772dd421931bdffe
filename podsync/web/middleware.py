"""The one middleware every request passes: request id, client address, bearer auth
and errors.

Every error leaves as the one JSON shape with an `X-Request-ID` (or as the page of a
protocol that answers people, the web UI's, for its own paths); an unexpected
exception is logged with its request id and answered with a bare 500. The `Server`
and `X-Request-ID` headers are set once, when a response is prepared
(`set_server_header`), whoever made it.

One function rather than a chain of three: aiohttp calls each middleware as its own
coroutine, and on a poll at the head of the change feed those layers were about a
tenth of podsync's own time (docs/performance.md).
"""

from __future__ import annotations

import ipaddress
import itertools
import logging
import re
import secrets
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from podsync.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from podsync.web.http import json_error, unknown_charset
from podsync.web.keys import (
    AUTH,
    CLIENT_ADDRESS,
    CONFIG,
    ERROR_PAGE,
    FROM_TRUSTED_PROXY,
    REQUEST_ID,
    USER,
)

log = logging.getLogger("podsync.web")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}", re.ASCII)
WWW_AUTHENTICATE = 'Bearer realm="podsync"'
# RFC 6750 section 3.1: a token was sent, and it is expired, revoked or forged.
INVALID_TOKEN_CHALLENGE = 'Bearer realm="podsync", error="invalid_token"'  # noqa: S105
# nginx's "client closed request": what the access log shows for a client that hung
# up before its request was read (the response is never sent).
CLIENT_CLOSED_REQUEST = 499
# The Server header names the product, never a version (contract 8).
SERVER_HEADER = "podsync"
# Request ids made here: a random prefix per process and a counter, unique without a
# getrandom() syscall per request (uuid4 cost ~0.1 ms of a list page under load).
_ID_PREFIX = secrets.token_hex(6)
_ID_COUNTER = itertools.count(1)
# Route names of the protocols with their own authentication.
OWN_RULES = ("gpodder.", "ui.", "nextcloud.")
# Routes anyone may call; everything else needs a bearer token.
PUBLIC_PATHS = frozenset(
    {"/", "/healthz", "/metrics", "/auth/login", "/auth/refresh", "/api/v1/openapi.json"}
)


def _framework_description(exc: web.HTTPException, request: web.Request) -> str:
    if isinstance(exc, web.HTTPNotFound):
        return f"no such resource: {request.method} {request.rel_url.raw_path}"
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = ", ".join(sorted(exc.allowed_methods))
        return f"method {request.method} is not allowed here; allowed: {allowed}"
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        limit = request.app[CONFIG].server.max_body_bytes
        return f"request body is larger than the limit of {limit} bytes"
    return exc.reason


def request_id_of(request: web.Request) -> str:
    """The client's X-Request-ID when it is a sound one, else a fresh id; kept on the
    request so every middleware and log line uses the same."""
    if REQUEST_ID in request:
        return request[REQUEST_ID]
    return _assign_request_id(request)


def _assign_request_id(request: web.Request) -> str:
    given = request.headers.get("X-Request-ID")
    if given is None or not REQUEST_ID_PATTERN.fullmatch(given):
        given = f"{_ID_PREFIX}{next(_ID_COUNTER):020x}"
    request[REQUEST_ID] = given
    return given


def request_middleware(trusted_proxies: tuple[str, ...]) -> Middleware:
    """The middleware: outermost but for metrics and CORS (web/app.py)."""
    proxies = tuple(ipaddress.ip_network(p, strict=False) for p in trusted_proxies)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        # Only a CORS preflight, answered outside without coming here, has one already.
        request_id = _assign_request_id(request)
        if proxies:
            _set_client_address(request, proxies)
        else:
            request[CLIENT_ADDRESS] = request.remote or "unknown"
        response: web.StreamResponse
        try:
            if request.body_exists:
                _check_body_charset(request)
            if _needs_bearer(request):
                request[USER] = await request.app[AUTH].authenticate(bearer_token(request))
            response = await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:  # podsync never redirects; let any other success through
                raise
            response = _error_answer(request, exc, request_id)
        except Exception as exc:
            response = _error_answer(request, exc, request_id)
        if response.status == 401:  # the gpodder layer answers its own Basic challenge
            response.headers.setdefault("WWW-Authenticate", WWW_AUTHENTICATE)
        return response

    return middleware


def _error_answer(request: web.Request, exc: Exception, request_id: str) -> web.StreamResponse:
    """What answers `exc`: the JSON error shape (or a protocol's page) with the status
    the error names; a 500 for anything unexpected."""
    if isinstance(exc, InvalidInput | Conflict):
        return _error_response(request, 400, str(exc))
    if isinstance(exc, Unauthorized):
        response = _error_response(request, 401, str(exc))
        challenge = INVALID_TOKEN_CHALLENGE if exc.invalid_token else WWW_AUTHENTICATE
        response.headers.setdefault("WWW-Authenticate", challenge)
        return response
    if isinstance(exc, Forbidden):
        return _error_response(request, 403, str(exc))
    if isinstance(exc, NotFound):
        return _error_response(request, 404, str(exc))
    if isinstance(exc, TooManyRequests):
        retry = {"Retry-After": str(exc.retry_after)}
        return _error_response(request, 429, str(exc), headers=retry)
    if isinstance(exc, Unavailable):
        retry = {"Retry-After": str(exc.retry_after)}
        return _error_response(request, 503, exc.reason, headers=retry)
    if isinstance(exc, web.RequestPayloadError):
        return _error_response(
            request, 400, "request body could not be read: it does not decode as its headers say"
        )
    if isinstance(exc, web.HTTPException):
        response = _error_response(request, exc.status, _framework_description(exc, request))
        if "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
        return response
    if isinstance(exc, ConnectionError) and _client_gone(request):
        # The client hung up mid-request (mid-body, say): nothing to answer, no
        # fault of ours, and anyone can do it: no traceback, no 500 in the log.
        log.info(
            "client went away during %s %s (request id %s): %s",
            request.method,
            request.rel_url.raw_path,
            request_id,
            exc,
            extra={"request_id": request_id},
        )
        return web.Response(status=CLIENT_CLOSED_REQUEST)
    log.exception(
        "unhandled error in %s %s (request id %s)",
        request.method,
        request.rel_url.raw_path,
        request_id,
        extra={"request_id": request_id},
        exc_info=exc,
    )
    return _error_response(
        request, 500, f"the server failed unexpectedly; quote request id {request_id} to the admin"
    )


def _check_body_charset(request: web.Request) -> None:
    """A body labelled with a charset no codec decodes is refused before any handler
    reads it (called for requests with a body). The web UI's forms are read by its
    own form reader, which answers this (and a multipart part's charset) on its page."""
    if (request.match_info.route.name or "").startswith("ui."):
        return
    charset = unknown_charset(request)
    if charset is not None:
        raise InvalidInput(
            f"request body could not be read: its charset {charset[:40]!r} is unknown; send UTF-8"
        )


def _error_response(
    request: web.Request, status: int, description: str, headers: dict[str, str] | None = None
) -> web.Response:
    """The JSON error shape, or the page of a protocol that claims the request."""
    page = request.app.get(ERROR_PAGE)
    if page is not None:
        try:
            response = page(request, status, description)
        except Exception:
            log.exception("the error page for %s failed", request.rel_url.raw_path)
            response = None
        if response is not None:
            response.headers.update(headers or {})
            return response
    return json_error(status, description, headers)


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]


def _forwarded_client(peer: str, forwarded_for: str, proxies: Networks) -> str:
    """Walk X-Forwarded-For from the right, skipping trusted proxies."""
    client = peer
    for hop in reversed([h.strip() for h in forwarded_for.split(",") if h.strip()]):
        if not _is_trusted(client, proxies):
            break
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break
        client = hop
    return client


def _is_trusted(address: str, proxies: Networks) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def is_trusted_proxy(address: str, trusted: tuple[str, ...]) -> bool:
    proxies = tuple(ipaddress.ip_network(p, strict=False) for p in trusted)
    return _is_trusted(address, proxies)


def _set_client_address(request: web.Request, proxies: Networks) -> None:
    """The client's address: the peer's, or from X-Forwarded-For when the peer is a
    trusted proxy (and then FROM_TRUSTED_PROXY, so its other X-Forwarded-* count)."""
    peer = request.remote or "unknown"
    if _is_trusted(peer, proxies):
        request[FROM_TRUSTED_PROXY] = True  # absent is False: its readers say so
        forwarded = request.headers.get("X-Forwarded-For")
        request[CLIENT_ADDRESS] = _forwarded_client(peer, forwarded, proxies) if forwarded else peer
    else:
        request[CLIENT_ADDRESS] = peer


def bearer_token(request: web.Request) -> str:
    header = request.headers.get("Authorization")
    if header is None:
        raise Unauthorized("missing Authorization header; send Authorization: Bearer <token>")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if not token or scheme.lower() != "bearer":
        raise Unauthorized("Authorization header must use the Bearer scheme")
    return token


def _needs_bearer(request: web.Request) -> bool:
    """Every route outside PUBLIC_PATHS needs a valid access token. Unknown paths and
    wrong methods do not, so that they answer 404/405, not 401."""
    match_info = request.match_info
    if match_info.http_exception is not None or request.path in PUBLIC_PATHS:
        return False
    # The gpodder layer (/api/2/, /subscriptions/) authenticates on its own terms.
    # The web UI (/ui/) has its own session rules (web/ui/guard.py), the Nextcloud
    # API (/index.php/) its Basic (web/nextcloud/http.py).
    name = match_info.route.name
    return name is None or not name.startswith(OWN_RULES)


async def set_server_header(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: replace aiohttp's `Python/3.x aiohttp/3.x` Server header,
    and give every response its request id: the middleware's answers, a streamed
    response (sent before the middleware sees it) and a CORS preflight alike."""
    response.headers["Server"] = SERVER_HEADER
    request_id = request.get(REQUEST_ID)
    if request_id is not None:
        response.headers["X-Request-ID"] = request_id
