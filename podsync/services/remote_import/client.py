"""Reading an account on another sync server, with aiohttp's client.

Two families of API (read from their sources, not guessed):

- gpodder.net v2 (mygpo, oPodSync, another podsync, ...). Devices from
  `/api/2/devices/USER.json`, then each device's subscriptions with `since=0` (its
  `add` and `remove` lists; oPodSync ignores the device and answers the account's
  list). Episode actions from `/api/2/episodes/USER.json?since=0`, then again with
  the answer's `timestamp` as `since`: mygpo pages (at most MAX_EPISODE_ACTIONS an
  answer, the timestamp of the last one given, compared with >=), podsync pages by an
  opaque cursor, oPodSync answers everything at once with the server's clock.
- Nextcloud GPodder Sync (`/index.php/apps/gpoddersync/`): `subscriptions?since=0`
  and `episode_action?since=0`, one answer each, timestamps compared with >.

Every call carries HTTP Basic credentials (all of them accept it on every call), no
redirect is followed (the answer names where it leads), and a failure names the
call and what the server answered. The password is never in a URL or a message.

Answers are read as they arrive (`json_stream`), never held whole, and every bound
of `ImportBounds` that concerns the remote's answers is checked here: the number of
calls, the size of one answer.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

import aiohttp
from yarl import URL

from podsync import __version__
from podsync.errors import PodsyncError
from podsync.services.feeds.addresses import PublicOnlyResolver, RefusedAddress, check_literal
from podsync.services.remote_import.bounds import ImportBoundReached, ImportBounds
from podsync.services.remote_import.json_stream import Event, JsonReader, Opened, TextDecoder

Api = Literal["gpodder", "nextcloud"]
APIS: tuple[Api, ...] = ("gpodder", "nextcloud")
NEXTCLOUD_PATH = "/index.php/apps/gpoddersync"
USER_AGENT = f"podsync/{__version__} (importing an account)"
READ_BYTES = 64 << 10  # read from the socket, then decoded, at a time
# A piece this large is decoded in a thread (a value at a time, so the event loop
# runs between values); a smaller one costs less than the thread hop.
THREADED_TEXT = 8 << 10
SMALL_ANSWER = 64 << 10  # the most read of an answer that is only shown (a refusal)
_SHOWN = 200  # characters of an unexpected answer quoted in a message


class RemoteError(PodsyncError):
    """A remote call failed: `call` names it (method and URL, no credentials),
    `answer` what came back."""

    def __init__(self, call: str, answer: str) -> None:
        super().__init__(f"{call}: {answer}")
        self.call = call
        self.answer = answer


class RemoteUnauthorized(RemoteError):
    """The remote server refused the user name and password."""


class RemoteRefusedAddress(RemoteError):
    """The server's address is not one this import may reach (a private address
    while only public ones are allowed); `reason` says which address."""

    def __init__(self, call: str, reason: str) -> None:
        super().__init__(call, f"refused: {reason}")
        self.reason = reason


@dataclass(frozen=True)
class RemoteAccount:
    url: str  # the server's base address, path prefix included
    username: str
    password: str
    api: Api | None = None  # None: detected


def base_url(raw: str) -> tuple[str, Api | None]:
    """The server's base from what a person typed, and the API it names when the
    address is the Nextcloud app's own (…/index.php/apps/gpoddersync). ValueError
    with the reason when it is not an http(s) address."""
    text = raw.strip()
    try:
        url = URL(text)
    except ValueError:
        raise ValueError("the server address is not a URL") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("the server address must start with http:// or https://")
    if url.user is not None or url.password is not None:
        raise ValueError("put no user name or password in the server address")
    path = url.path.rstrip("/")
    named: Api | None = None
    if path.endswith(NEXTCLOUD_PATH):
        path, named = path[: -len(NEXTCLOUD_PATH)], "nextcloud"
    return str(url.with_path(path or "/").with_query(None).with_fragment(None)).rstrip("/"), named


class RemoteClient:
    """One remote account's calls; use as `async with RemoteClient(...) as remote`.

    `allow_private=False` connects to public addresses only (the web UI, where any
    user names the server); the CLI, run by the server's admin, reaches any."""

    def __init__(
        self,
        account: RemoteAccount,
        bounds: ImportBounds,
        *,
        allow_private: bool = True,
        timeout_s: float = 300.0,
        read_timeout_s: float = 60.0,
    ) -> None:
        self.base, named = base_url(account.url)
        self.account = account
        self.bounds = bounds
        self.api: Api | None = account.api or named
        self.allow_private = allow_private
        self.requests = 0  # calls made, for the bound
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, sock_read=read_timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self.user = quote(account.username, safe="")

    async def __aenter__(self) -> RemoteClient:
        resolver = None if self.allow_private else PublicOnlyResolver()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(resolver=resolver, limit=2),
            headers={
                "User-Agent": USER_AGENT,
                "Accept": "application/json",
                "Authorization": _basic(self.account.username, self.account.password),
            },
            timeout=self._timeout,
            trust_env=False,
        )
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- the calls ---------------------------------------------------------------

    async def sign_in(self) -> Api:
        """Check the user name and password (RemoteUnauthorized when refused) and
        settle which API the server speaks; nothing is read yet."""
        if self.api == "nextcloud":
            await self._nextcloud_answers()
            return "nextcloud"
        try:
            status, call, body = await self._small("POST", f"/api/2/auth/{self.user}/login.json")
        except RemoteRefusedAddress:
            raise
        except RemoteError as exc:  # a redirect to a sign-in page, say (Nextcloud)
            if self.api == "gpodder":
                raise
            gpodder_said = str(exc)
        else:
            if status == 200:
                self.api = "gpodder"
                return "gpodder"
            if status == 401:
                raise RemoteUnauthorized(call, self._refusal(status, body))
            if self.api == "gpodder":
                raise RemoteError(call, self._said(status, body))
            gpodder_said = f"{call}: {self._said(status, body)}"
        try:
            await self._nextcloud_answers()
        except RemoteUnauthorized:
            raise
        except RemoteError as exc:
            raise RemoteError(
                "neither API answered",
                f"{gpodder_said}; {exc}. Check the address (the server's base, path "
                "prefix included), or say which API it speaks",
            ) from None
        self.api = "nextcloud"
        return "nextcloud"

    def devices_path(self) -> str:
        return f"/api/2/devices/{self.user}.json"

    def device_list_path(self, device_id: str) -> str:
        return f"/api/2/subscriptions/{self.user}/{quote(device_id, safe='')}.json"

    def simple_list_path(self) -> str:
        return f"/subscriptions/{self.user}.json"

    def nextcloud_list_path(self) -> str:
        return f"{NEXTCLOUD_PATH}/subscriptions"

    def episodes_path(self) -> str:
        if self.api == "nextcloud":
            return f"{NEXTCLOUD_PATH}/episode_action"
        return f"/api/2/episodes/{self.user}.json"

    def episodes_call(self, since: str) -> str:
        """The episode call for `since`, as a failure names it."""
        return self.name("GET", self.episodes_path(), {"since": since})

    async def answer(self, path: str, query: dict[str, str]) -> AsyncGenerator[Event, None]:
        """The JSON answer of GET `path`, as it arrives (see json_stream). Use in
        `contextlib.aclosing`: leaving early closes the connection."""
        call = self.name("GET", path, query)
        resp = await self._open("GET", path, query)
        try:
            if resp.status != 200:
                body = await self._read_small(resp, call)
                if resp.status == 401:
                    raise RemoteUnauthorized(call, self._refusal(resp.status, body))
                raise RemoteError(call, self._said(resp.status, body))
            reader = JsonReader()
            decoder = TextDecoder()
            try:
                async for data in self._pieces(resp, call):
                    text = decoder.decode(data)
                    if len(text) >= THREADED_TEXT:
                        events = await asyncio.to_thread(reader.feed, text)
                    else:
                        events = reader.feed(text)
                    for event in events:
                        yield event
                events = reader.feed(decoder.decode(b"", final=True)) + reader.finish()
            except ValueError as exc:  # UnicodeDecodeError too
                raise RemoteError(call, f"not JSON: {exc}") from None
            for event in events:
                yield event
        finally:
            resp.close()

    # -- plumbing ----------------------------------------------------------------

    async def _nextcloud_answers(self) -> None:
        """The Nextcloud app's subscriptions call answers a list of feeds (read up
        to where the list begins, not further)."""
        path = self.nextcloud_list_path()
        async with aclosing(self.answer(path, {"since": "0"})) as events:
            async for event in events:
                if isinstance(event, Opened) and event.key == "add":
                    return
        raise RemoteError(self.name("GET", path, {"since": "0"}), "the answer has no list of feeds")

    async def _small(
        self, method: str, path: str, query: dict[str, str] | None = None
    ) -> tuple[int, str, bytes]:
        """A call whose answer is only looked at, not read as data: its status, its
        name, at most SMALL_ANSWER bytes of its body."""
        call = self.name(method, path, query)
        resp = await self._open(method, path, query)
        try:
            return resp.status, call, await self._read_small(resp, call)
        finally:
            resp.close()

    async def _open(
        self, method: str, path: str, query: dict[str, str] | None = None
    ) -> aiohttp.ClientResponse:
        """Send one call (counted against the bound); its answer's headers."""
        assert self._session is not None, "use RemoteClient in `async with`"
        url = URL(self.base + path, encoded=True)
        if query:
            url = url.with_query(query)
        call = self.name(method, path, query)
        if self.requests >= self.bounds.max_requests:
            raise ImportBoundReached(self.bounds.requests_message())
        self.requests += 1
        try:
            if not self.allow_private and url.host:
                check_literal(url.host)
            resp = await self._session.request(method, url, allow_redirects=False)
        except RefusedAddress as exc:
            raise RemoteRefusedAddress(call, str(exc)) from None
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, RefusedAddress):
                raise RemoteRefusedAddress(call, str(exc.os_error)) from None
            if isinstance(exc, aiohttp.ClientConnectorDNSError):
                raise RemoteError(call, "the host name does not resolve") from None
            reason = exc.os_error.strerror or str(exc.os_error)
            raise RemoteError(call, f"cannot connect: {reason}") from None
        except _FAILURES as exc:
            raise _failure(call, exc) from None
        if resp.status in (301, 302, 303, 307, 308):
            where = resp.headers.get("Location", "nowhere")
            resp.close()
            raise RemoteError(
                call,
                f"HTTP {resp.status}, redirected to {_quote(where.encode())}; "
                "give that address instead",
            )
        return resp

    async def _pieces(self, resp: aiohttp.ClientResponse, call: str) -> AsyncIterator[bytes]:
        """The body as it arrives, at most READ_BYTES at a time, within the bound."""
        limit = self.bounds.max_answer_bytes
        if resp.content_length is not None and resp.content_length > limit:
            raise ImportBoundReached(f"{call}: {self.bounds.answer_message()}")
        total = 0
        while True:
            try:
                data = await resp.content.read(READ_BYTES)
            except _FAILURES as exc:
                raise _failure(call, exc) from None
            if not data:
                return
            total += len(data)
            if total > limit:
                raise ImportBoundReached(f"{call}: {self.bounds.answer_message()}")
            yield data

    async def _read_small(self, resp: aiohttp.ClientResponse, call: str) -> bytes:
        body = bytearray()
        async for data in self._pieces(resp, call):
            body += data
            if len(body) >= SMALL_ANSWER:
                break
        return bytes(body[:SMALL_ANSWER])

    def name(self, method: str, path: str, query: dict[str, str] | None = None) -> str:
        shown = self.base + path
        if query:
            shown += "?" + "&".join(f"{k}={v}" for k, v in query.items())
        return f"{method} {shown}"

    @staticmethod
    def _said(status: int, body: bytes) -> str:
        return f"HTTP {status}" + (f": {_quote(body)}" if body.strip() else "")

    def _refusal(self, status: int, body: bytes) -> str:
        return (
            f"{self._said(status, body)} (the server refused user "
            f"{self.account.username!r} with this password)"
        )


# What a call that failed raises (a connection refused or reset is an OSError, an
# address aiohttp cannot use a ValueError).
_FAILURES = (aiohttp.ClientError, TimeoutError, ValueError, OSError)


def _failure(call: str, exc: Exception) -> RemoteError:
    """What a failed call says, from aiohttp's exception."""
    if isinstance(exc, TimeoutError):
        return RemoteError(call, "no complete answer in time")
    if isinstance(exc, aiohttp.ClientPayloadError):
        return RemoteError(call, "the answer was cut off before its end")
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return RemoteError(call, "the server closed the connection without an answer")
    return RemoteError(call, f"the request failed: {type(exc).__name__}")


def _basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def _quote(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
