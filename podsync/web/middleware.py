"""The middleware chain: request id + errors (outermost), client address, bearer auth.

Every error leaves as the one JSON shape with an `X-Request-ID`; an unexpected
exception is logged with its request id and answered with a bare 500.
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
from podsync.web.http import json_error
from podsync.web.keys import AUTH, CLIENT_ADDRESS, CONFIG, FROM_TRUSTED_PROXY, REQUEST_ID, USER

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
    given = request.headers.get("X-Request-ID", "")
    request_id = (
        given if REQUEST_ID_PATTERN.fullmatch(given) else f"{_ID_PREFIX}{next(_ID_COUNTER):020x}"
    )
    request[REQUEST_ID] = request_id
    return request_id


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Outermost: request id on every response, every error in the JSON shape."""
    request_id = request_id_of(request)
    response: web.StreamResponse
    challenge = WWW_AUTHENTICATE
    try:
        response = await handler(request)
    except InvalidInput as exc:
        response = json_error(400, str(exc))
    except Unauthorized as exc:
        response = json_error(401, str(exc))
        if exc.invalid_token:
            challenge = INVALID_TOKEN_CHALLENGE
    except Forbidden as exc:
        response = json_error(403, str(exc))
    except NotFound as exc:
        response = json_error(404, str(exc))
    except Conflict as exc:
        response = json_error(400, str(exc))
    except TooManyRequests as exc:
        response = json_error(429, str(exc), headers={"Retry-After": str(exc.retry_after)})
    except Unavailable as exc:
        response = json_error(503, exc.reason, headers={"Retry-After": str(exc.retry_after)})
    except web.RequestPayloadError:
        response = json_error(
            400, "request body could not be read: it does not decode as its headers say"
        )
    except web.HTTPException as exc:
        if exc.status < 400:  # podsync never redirects; let any other success through
            raise
        response = json_error(exc.status, _framework_description(exc, request))
        if "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
    except Exception as exc:
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
            response = web.Response(status=CLIENT_CLOSED_REQUEST)
        else:
            log.exception(
                "unhandled error in %s %s (request id %s)",
                request.method,
                request.rel_url.raw_path,
                request_id,
                extra={"request_id": request_id},
            )
            response = json_error(
                500, f"the server failed unexpectedly; quote request id {request_id} to the admin"
            )
    if response.status == 401:  # the gpodder layer answers its own Basic challenge
        response.headers.setdefault("WWW-Authenticate", challenge)
    response.headers["X-Request-ID"] = request_id
    return response


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


def client_address_middleware(trusted: tuple[str, ...]) -> Middleware:
    proxies = tuple(ipaddress.ip_network(p, strict=False) for p in trusted)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        peer = request.remote or "unknown"
        forwarded = request.headers.get("X-Forwarded-For")
        trusted = bool(proxies) and _is_trusted(peer, proxies)
        request[FROM_TRUSTED_PROXY] = trusted
        if trusted and forwarded:
            request[CLIENT_ADDRESS] = _forwarded_client(peer, forwarded, proxies)
        else:
            request[CLIENT_ADDRESS] = peer
        return await handler(request)

    return middleware


def bearer_token(request: web.Request) -> str:
    header = request.headers.get("Authorization")
    if header is None:
        raise Unauthorized("missing Authorization header; send Authorization: Bearer <token>")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Authorization header must use the Bearer scheme")
    return token.strip()


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every route outside PUBLIC_PATHS needs a valid access token. Unknown paths and
    wrong methods fall through so that they answer 404/405, not 401."""
    route_error = request.match_info.http_exception
    # The gpodder layer (/api/2/, /subscriptions/) authenticates on its own terms.
    # The web UI (/ui/) has its own session rules (web/ui/guard.py), the Nextcloud
    # API (/index.php/) its Basic (web/nextcloud/http.py).
    name = request.match_info.route.name or ""
    own_rules = name.startswith(("gpodder.", "ui.", "nextcloud."))
    if route_error is None and request.path not in PUBLIC_PATHS and not own_rules:
        request[USER] = await request.app[AUTH].authenticate(bearer_token(request))
    return await handler(request)


async def set_server_header(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: replace aiohttp's `Python/3.x aiohttp/3.x` Server header,
    and give a streamed response (sent before the middleware sees it) its request id."""
    response.headers["Server"] = SERVER_HEADER
    request_id = request.get(REQUEST_ID)
    if request_id is not None:
        response.headers["X-Request-ID"] = request_id
