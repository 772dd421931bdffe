"""The one middleware every request passes: request id, client address and errors.

Every error leaves (web/errors.py) as the one JSON shape with an `X-Request-ID` (or as the page of a
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
from typing import TypeVar

from aiohttp import web
from aiohttp.typedefs import Middleware

from podsync.errors import InvalidInput
from podsync.web.errors import WWW_AUTHENTICATE, error_answer
from podsync.web.http import unknown_charset
from podsync.web.keys import CLIENT_ADDRESS, FROM_TRUSTED_PROXY, REQUEST_ID

log = logging.getLogger("podsync.web")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
H = TypeVar("H", bound=Handler)
Guard = Callable[[web.Request], Awaitable[None]]
# Routes anyone may call; every other needs the guard's check or its protocol's own.
PUBLIC_PATHS = frozenset(
    {"/", "/healthz", "/metrics", "/auth/login", "/auth/refresh", "/api/v1/openapi.json"}
)
_OWN_CALLERS = "podsync_checks_own_callers"
_OWN_FORMS = "podsync_reads_own_forms"
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}", re.ASCII)
# The Server header names the product, never a version (contract 8).
SERVER_HEADER = "podsync"
# Request ids made here: a random prefix per process and a counter, unique without a
# getrandom() syscall per request (uuid4 cost ~0.1 ms of a list page under load).
_ID_PREFIX = secrets.token_hex(6)
_ID_COUNTER = itertools.count(1)


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


def checks_own_callers(handler: H) -> H:
    """Mark a route's handler as one whose protocol checks its callers itself (the
    gpodder, Nextcloud and web UI wrappers): the middleware's `guard` passes it by."""
    setattr(handler, _OWN_CALLERS, True)
    return handler


def reads_own_forms(handler: H) -> H:
    """Mark a route's handler as one whose protocol reads its bodies itself and
    answers an unreadable one on its own page (the web UI's form reader)."""
    setattr(handler, _OWN_FORMS, True)
    return handler


def request_middleware(trusted_proxies: tuple[str, ...], guard: Guard) -> Middleware:
    """The middleware: outermost but for metrics and CORS (web/app.py). `guard`
    checks the caller of every route but the public ones and those whose protocol
    checks its own (`checks_own_callers`): the API's bearer check, web/opa/guard.py.
    Protected unless said otherwise, so that a new route is never open by mistake."""
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
            if _needs_guard(request):
                await guard(request)
            response = await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:  # podsync never redirects; let any other success through
                raise
            response = error_answer(request, exc, request_id)
        except Exception as exc:
            response = error_answer(request, exc, request_id)
        if response.status == 401:  # the gpodder layer answers its own Basic challenge
            response.headers.setdefault("WWW-Authenticate", WWW_AUTHENTICATE)
        return response

    return middleware


def _check_body_charset(request: web.Request) -> None:
    """A body labelled with a charset no codec decodes is refused before any handler
    reads it (called for requests with a body). The web UI's forms are read by its
    own form reader, which answers this (and a multipart part's charset) on its page."""
    if getattr(request.match_info.handler, _OWN_FORMS, False):
        return
    charset = unknown_charset(request)
    if charset is not None:
        raise InvalidInput(
            f"request body could not be read: its charset {charset[:40]!r} is unknown; send UTF-8"
        )


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


def _needs_guard(request: web.Request) -> bool:
    """Every route outside PUBLIC_PATHS, unless its protocol checks its own callers.
    Unknown paths and wrong methods do not, so that they answer 404/405, not 401."""
    match_info = request.match_info
    if match_info.http_exception is not None or request.path in PUBLIC_PATHS:
        return False
    return not getattr(match_info.handler, _OWN_CALLERS, False)


async def set_server_header(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: replace aiohttp's `Python/3.x aiohttp/3.x` Server header,
    and give every response its request id: the middleware's answers, a streamed
    response (sent before the middleware sees it) and a CORS preflight alike."""
    response.headers["Server"] = SERVER_HEADER
    request_id = request.get(REQUEST_ID)
    if request_id is not None:
        response.headers["X-Request-ID"] = request_id
