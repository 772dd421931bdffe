"""Request parsing and response shaping shared by every handler.

`StreamedJson` is a JSON answer written as it is read: the episode pulls of a long
history. It is returned by a handler like any response (the wrappers still set
its headers: cookies, Cache-Control) and writes its body when aiohttp finishes the
response: the head, each piece as the iterator gives it (each write waits until the
client has taken enough of the last), then the tail, which may depend on what was
read (a cursor, stored by the tail before it leaves). The body has no length ahead,
so it goes out chunked.

Once the headers are out, a failure can no longer be answered with an error: the
connection is closed mid-body (the client sees a cut answer, never a complete wrong
one, and asks again) and the failure is logged.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import logging
import math
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from podsync.errors import InvalidInput, TooManyRequests, Unauthorized, Unavailable
from podsync.feeds import has_bad_characters as has_bad_characters
from podsync.model import Caller
from podsync.web.keys import CLIENT_ADDRESS, SYNC_HEALTH

log = logging.getLogger("podsync.web")
MAX_DOUBLE = int(sys.float_info.max)

# The contract's `error` value for every status podsync answers with.
ERROR_NAMES: dict[int, str] = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    413: "Payload too large",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


def error_name(status: int) -> str:
    if status in ERROR_NAMES:
        return ERROR_NAMES[status]
    return ERROR_NAMES[500] if status >= 500 else ERROR_NAMES[400]


# Built once (json.dumps with custom separators builds an encoder per call). ASCII
# output: a lone surrogate echoed back from a request stays valid JSON.
dumps = json.JSONEncoder(separators=(",", ":")).encode


def json_ok(value: Any, status: int = 200) -> web.Response:
    return web.json_response(value, status=status, dumps=dumps)


JSON_TYPE = "application/json; charset=utf-8"
JSON_HEADERS = {"Content-Type": JSON_TYPE}
# What a GET answered with an ETag may be kept as. private: per-user data; no-cache:
# keep it, but ask each time (the ETag says).
CACHE_CONTROL = "private, no-cache"


def json_bytes(body: bytes, status: int = 200) -> web.Response:
    """A response whose JSON body is already encoded."""
    return web.Response(body=body, status=status, headers=JSON_HEADERS)


def _etag(body: bytes) -> str:
    # A digest of the bytes, not a secret: SHA-1 is the cheapest hashlib offers here
    # (a page of 50 is ~10 KB, hashed on every list request).
    return '"' + hashlib.sha1(body, usedforsecurity=False).hexdigest()[:24] + '"'


def _matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110 13.1.2: weak comparison against a list of tags, or `*`."""
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


def conditional_json(request: web.Request, body: bytes) -> web.Response:
    """A JSON answer to a GET with an ETag taken from its bytes; 304 without a body when
    the client's If-None-Match already names it. Derived from the bytes, the tag is
    right whoever wrote last, in this process or another."""
    etag = _etag(body)
    given = request.headers.get("If-None-Match")
    if given is not None and _matches(given, etag):
        return web.Response(status=304, headers={"ETag": etag, "Cache-Control": CACHE_CONTROL})
    return web.Response(
        body=body,
        headers={"Content-Type": JSON_TYPE, "ETag": etag, "Cache-Control": CACHE_CONTROL},
    )


def json_error(
    status: int, description: str, headers: dict[str, str] | None = None
) -> web.Response:
    body = {"error": error_name(status), "description": description}
    return web.json_response(body, status=status, headers=headers, dumps=dumps)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    # Python reads 1e400 as inf, and would echo it as `Infinity`, which is not JSON.
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} does not fit a double")
    return value


def _double_int(text: str) -> int:
    # An integer is fine as long as a client's JSON parser (a double) can hold it.
    value = int(text)
    if abs(value) > MAX_DOUBLE:
        raise ValueError(f"the number {text[:40]} does not fit a double")
    return value


def unknown_charset(request: web.Request) -> str | None:
    """The `charset` a request's Content-Type names when Python has no text codec of
    that name ("x-bogus", "base64"), else None. Every API body is read as UTF-8
    (JSON is UTF-8 whatever the label, RFC 8259), but a body labelled with a charset
    nobody can decode is not one to guess at: a 400, on every route."""
    charset = request.charset
    if charset is None:
        return None
    try:
        # Not b"": decoding nothing never looks the codec up.
        b"a".decode(charset, "ignore")
    except LookupError:
        return charset
    return None


async def read_json(request: web.Request) -> Any:
    """The request body as JSON. 400 for a wrong Content-Type or bad JSON; the body
    size limit (413) is enforced by aiohttp's client_max_size while reading."""
    if request.content_type != "application/json":
        raise InvalidInput(
            f"Content-Type must be application/json, not {request.content_type or 'absent'}"
        )
    body = await request.read()
    if not body:
        raise InvalidInput("request body is empty; send a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"request body is not UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_double_int,
        )
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except ValueError as exc:
        raise InvalidInput(f"request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidInput("request body is nested too deeply") from None


async def read_json_object(request: web.Request) -> dict[str, Any]:
    value = await read_json(request)
    if not isinstance(value, dict):
        raise InvalidInput(f"request body must be a JSON object, not {json_type(value)}")
    return value


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def client_id(request: web.Request) -> str | None:
    """The optional `Client-ID` header, normalised; 400 when present but not a UUID."""
    raw = request.headers.get("Client-ID")
    if raw is None:
        return None
    try:
        return str(uuid.UUID(raw.strip()))
    except ValueError:
        raise InvalidInput("Client-ID header must be a UUID") from None


def basic_credentials(header: str) -> tuple[str, str]:
    """(name, password) of an `Authorization: Basic` header; Unauthorized otherwise."""
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        raise Unauthorized("this API takes Basic credentials")
    try:
        raw = base64.b64decode(encoded.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise Unauthorized("Basic credentials are not valid base64") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:  # OkHttp's Credentials.basic default is ISO-8859-1
        text = raw.decode("latin-1")
    name, colon, password = text.partition(":")
    if not colon:
        raise Unauthorized("Basic credentials must be user:password")
    return name, password


async def note_refusal(
    request: web.Request, door: str, device_id: str | None, refusal: Exception
) -> None:
    """Keep a refused sync for the Devices page (services/sync_health.py): Basic
    credentials that were not accepted, or not checked because the name or the
    address is locked out (TooManyRequests). A request without credentials, or with
    unreadable ones, is no attempt of anyone's."""
    header = request.headers.get("Authorization")
    if header is None:
        return
    try:
        name, password = basic_credentials(header)
    except Unauthorized:
        return
    locked_out = isinstance(refusal, TooManyRequests)
    caller = login_caller(request, door)
    await request.app[SYNC_HEALTH].refused(name, password, caller, device_id, locked_out)


def login_caller(request: web.Request, door: str) -> Caller:
    """Who tries a password in this request: the client's address (a trusted
    proxy's X-Forwarded-For included), the door and the client's User-Agent."""
    address = request.get(CLIENT_ADDRESS, request.remote or "unknown")
    return Caller(address, door, request.headers.get("User-Agent", ""))


async def read_body(request: web.Request) -> Any:
    """The body as JSON whatever its Content-Type (AntennaPod says `plain/text`,
    mygpoclient form-urlencoded, Kasts nothing); None when empty."""
    body = await request.read()
    if not body.strip():
        return None
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInput("request body is not UTF-8") from None
    except (ValueError, RecursionError):
        raise InvalidInput("request body is not valid JSON") from None


class StreamedJson(web.StreamResponse):
    def __init__(
        self,
        head: bytes,
        pieces: AsyncIterator[bytes],
        tail: Callable[[], Awaitable[bytes]],
    ) -> None:
        super().__init__(status=200, headers={"Content-Type": JSON_TYPE})
        self._head = head
        self._pieces = pieces
        self._tail = tail
        self._streamed = False

    async def write_eof(self, data: bytes = b"") -> None:
        request = self._req
        if not self._streamed and request is not None and request.method != "HEAD":
            self._streamed = True
            written = 0
            try:
                await self.write(self._head)
                async for piece in self._pieces:
                    await self.write(piece)
                    written += len(piece)
                await self.write(await self._tail())
            except ConnectionError:
                raise  # the client went away: aiohttp logs it and closes
            except Exception as exc:
                log.warning(
                    "%s %s: the answer was cut off after %d bytes: %s",
                    request.method,
                    request.path,
                    written,
                    exc,
                    exc_info=not isinstance(exc, Unavailable),
                )
                if request.transport is not None:
                    request.transport.close()
                raise ConnectionResetError("answer cut off") from exc
        await super().write_eof(data)


async def stream_chunks(
    request: web.Request, response: web.StreamResponse, chunks: AsyncIterator[bytes]
) -> web.StreamResponse:
    """Send `chunks` as `response`'s body (an OPML export): the first is read before
    the headers go, so a fault in the database's first read is still an error answer
    (the API's 503, the web UI's page), not a 200 cut short. Reads run on the loop and
    a write returns at once while the socket has room, so each piece yields to the
    other requests before the next."""
    first = await anext(chunks)
    await response.prepare(request)
    await response.write(first)
    async for chunk in chunks:
        await response.write(chunk)
        await asyncio.sleep(0)
    await response.write_eof()
    return response
