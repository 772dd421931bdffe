"""Domain errors as each protocol's answer, from one table.

Every protocol answers an error with the status the table names. The Open Podcast
API, gpodder and Nextcloud answer in the one JSON error shape (`http.json_error`),
the web UI with its error page under the heading the table names. gpodder and
Nextcloud answer a refused caller (401, 403) inside their own wrappers, so that the
answer carries their Basic challenge and `Cache-Control: no-store`
(`basic_refusal`); the web UI's guard answers the errors it has a heading for
(`page_heading`); the rest leave through the middleware (`error_answer`), which
answers with the JSON shape or, for a request a protocol's page claims, the page.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from aiohttp import web

from podsync.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    PodsyncError,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from podsync.web.http import json_error
from podsync.web.keys import CONFIG, ERROR_PAGE

log = logging.getLogger("podsync.web")

WWW_AUTHENTICATE = 'Bearer realm="podsync"'
# RFC 6750 section 3.1: a token was sent, and it is expired, revoked or forged.
INVALID_TOKEN_CHALLENGE = 'Bearer realm="podsync", error="invalid_token"'  # noqa: S105
# nginx's "client closed request": what the access log shows for a client that hung
# up before its request was read (the response is never sent).
CLIENT_CLOSED_REQUEST = 499


@dataclass(frozen=True)
class Answer:
    status: int
    # The web UI's page heading; None: the UI's guard leaves it to the middleware,
    # which shows the UI's error page for the status.
    page_heading: str | None = None
    # gpodder and Nextcloud answer it in their own wrappers (a refused caller).
    basic_wrappers: bool = False


# First match wins (a LimitExceeded is an InvalidInput).
ANSWERS: tuple[tuple[type[PodsyncError], Answer], ...] = (
    (InvalidInput, Answer(400, "Not accepted")),
    (Conflict, Answer(400)),
    (Unauthorized, Answer(401, basic_wrappers=True)),
    (Forbidden, Answer(403, basic_wrappers=True)),
    (NotFound, Answer(404, "Not found")),
    (TooManyRequests, Answer(429, "Too many attempts")),
    (Unavailable, Answer(503, "Try again in a moment")),
)


def answer_for(exc: BaseException) -> Answer | None:
    for kind, answer in ANSWERS:
        if isinstance(exc, kind):
            return answer
    return None


def retry_after(exc: BaseException) -> dict[str, str] | None:
    """The Retry-After of a 429 or a 503."""
    if isinstance(exc, TooManyRequests | Unavailable):
        return {"Retry-After": str(exc.retry_after)}
    return None


def basic_refusal(exc: Unauthorized | Forbidden, challenge: str) -> web.Response:
    """gpodder's and Nextcloud's answer to a refused caller: the error shape, and on a
    401 their Basic `challenge`."""
    answer = answer_for(exc)
    assert answer is not None and answer.basic_wrappers
    headers = {"WWW-Authenticate": challenge} if isinstance(exc, Unauthorized) else None
    return json_error(answer.status, str(exc), headers=headers)


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


def error_answer(request: web.Request, exc: Exception, request_id: str) -> web.StreamResponse:
    """What answers `exc` in the middleware: the JSON error shape (or a protocol's
    page) with the status the table names; a 500 for anything unexpected."""
    answer = answer_for(exc)
    if answer is not None:
        response = error_response(request, answer.status, str(exc), headers=retry_after(exc))
        if isinstance(exc, Unauthorized):
            challenge = INVALID_TOKEN_CHALLENGE if exc.invalid_token else WWW_AUTHENTICATE
            response.headers.setdefault("WWW-Authenticate", challenge)
        return response
    if isinstance(exc, web.RequestPayloadError):
        return error_response(
            request, 400, "request body could not be read: it does not decode as its headers say"
        )
    if isinstance(exc, web.HTTPException):
        response = error_response(request, exc.status, _framework_description(exc, request))
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
    return error_response(
        request, 500, f"the server failed unexpectedly; quote request id {request_id} to the admin"
    )


def error_response(
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
