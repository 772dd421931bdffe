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
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import aiohttp
from yarl import URL

from podsync import __version__
from podsync.errors import PodsyncError
from podsync.services.feeds.addresses import PublicOnlyResolver, RefusedAddress, check_literal
from podsync.services.remote_import.json_pieces import LazyList, loads_in_pieces

Api = Literal["gpodder", "nextcloud"]
APIS: tuple[Api, ...] = ("gpodder", "nextcloud")
NEXTCLOUD_PATH = "/index.php/apps/gpoddersync"
USER_AGENT = f"podsync/{__version__} (importing an account)"
MAX_ANSWER_BYTES = 128 << 20  # one answer; oPodSync sends every action in one (~250 bytes each)
# Decoding a large answer takes a while: in a thread, a piece at a time (one
# json.loads of 10 MB holds the GIL, and so the event loop, for 0.2 s).
THREADED_JSON_BYTES = 256 << 10
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


@dataclass(frozen=True)
class RemoteAccount:
    url: str  # the server's base address, path prefix included
    username: str
    password: str
    api: Api | None = None  # None: detected


@dataclass(frozen=True)
class RemoteSubscriptions:
    subscribed: list[str]  # in some device's list (gpodder) or the account's
    unsubscribed: list[str]  # removed, and in no device's list
    devices: int  # how many devices were read (0 for Nextcloud)


@dataclass(frozen=True)
class ActionPage:
    actions: Sequence[Any]  # a LazyList when the answer is large
    timestamp: int | str


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
        *,
        allow_private: bool = True,
        timeout_s: float = 300.0,
        read_timeout_s: float = 60.0,
    ) -> None:
        self.base, named = base_url(account.url)
        self.account = account
        self.api: Api | None = account.api or named
        self.allow_private = allow_private
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, sock_read=read_timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._user = quote(account.username, safe="")

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
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- the calls ---------------------------------------------------------------

    async def sign_in(self) -> Api:
        """Check the user name and password (RemoteUnauthorized when refused) and
        settle which API the server speaks; nothing is read yet."""
        if self.api == "nextcloud":
            await self._nextcloud_subscriptions()
            return "nextcloud"
        try:
            status, call, body = await self._call("POST", f"/api/2/auth/{self._user}/login.json")
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
            await self._nextcloud_subscriptions()
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

    async def subscriptions(self) -> RemoteSubscriptions:
        if self.api == "nextcloud":
            add, remove = await self._nextcloud_subscriptions()
            return _merge([(add, remove)], 0)
        devices = await self._get_json(f"/api/2/devices/{self._user}.json", {})
        if not isinstance(devices, list):
            raise RemoteError(self._name("GET", "/api/2/devices/…"), "not a list of devices")
        ids = [d["id"] for d in devices if isinstance(d, dict) and isinstance(d.get("id"), str)]
        lists: list[tuple[list[Any], list[Any]]] = []
        for device_id in ids:
            path = f"/api/2/subscriptions/{self._user}/{quote(device_id, safe='')}.json"
            answer = await self._get_json(path, {"since": "0"})
            lists.append(self._add_remove(answer, path))
        if not ids:
            # No device: the simple API's account-wide list (mygpo, oPodSync).
            answer = await self._get_json(f"/subscriptions/{self._user}.json", {})
            urls = answer if isinstance(answer, list) else []
            lists.append(([_feed_of(u) for u in urls], []))
        return _merge(lists, len(ids))

    def _episodes_path(self) -> str:
        if self.api == "nextcloud":
            return f"{NEXTCLOUD_PATH}/episode_action"
        return f"/api/2/episodes/{self._user}.json"

    def episodes_call(self, since: int | str) -> str:
        """The episode call for `since`, as a failure names it."""
        return self._name("GET", self._episodes_path(), {"since": str(since)})

    async def episode_page(self, since: int | str) -> ActionPage:
        """One answer of episode actions after `since` (0 for all)."""
        path = self._episodes_path()
        answer = await self._get_json(path, {"since": str(since)}, lazy="actions")
        call = self.episodes_call(since)
        if not isinstance(answer, dict) or not isinstance(answer.get("actions"), list | LazyList):
            raise RemoteError(call, "the answer has no list of actions")
        timestamp = answer.get("timestamp")
        if isinstance(timestamp, bool) or not isinstance(timestamp, int | str):
            raise RemoteError(call, "the answer has no timestamp")
        return ActionPage(answer["actions"], timestamp)

    # -- plumbing ----------------------------------------------------------------

    async def _nextcloud_subscriptions(self) -> tuple[list[Any], list[Any]]:
        path = f"{NEXTCLOUD_PATH}/subscriptions"
        answer = await self._get_json(path, {"since": "0"})
        return self._add_remove(answer, path)

    def _add_remove(self, answer: Any, path: str) -> tuple[list[Any], list[Any]]:
        if not isinstance(answer, dict) or not isinstance(answer.get("add"), list):
            raise RemoteError(self._name("GET", path), "the answer has no list of feeds")
        remove = answer.get("remove")
        return answer["add"], remove if isinstance(remove, list) else []

    async def _get_json(self, path: str, query: dict[str, str], lazy: str | None = None) -> Any:
        """The answer's JSON; a large one's member `lazy` as a LazyList."""
        status, call, body = await self._call("GET", path, query)
        if status == 401:
            raise RemoteUnauthorized(call, self._refusal(status, body))
        if status != 200:
            raise RemoteError(call, self._said(status, body))
        try:
            if len(body) > THREADED_JSON_BYTES:
                return await asyncio.to_thread(loads_in_pieces, body, lazy)
            return json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: nested past any sense
            raise RemoteError(call, f"not JSON: {_quote(body)}") from None

    async def _call(
        self, method: str, path: str, query: dict[str, str] | None = None
    ) -> tuple[int, str, bytes]:
        assert self._session is not None, "use RemoteClient in `async with`"
        url = URL(self.base + path, encoded=True)
        if query:
            url = url.with_query(query)
        call = self._name(method, path, query)
        try:
            if not self.allow_private and url.host:
                check_literal(url.host)
            async with self._session.request(method, url, allow_redirects=False) as resp:
                if resp.status in (301, 302, 303, 307, 308):
                    where = resp.headers.get("Location", "nowhere")
                    raise RemoteError(
                        call,
                        f"HTTP {resp.status}, redirected to {_quote(where.encode())}; "
                        "give that address instead",
                    )
                body = await self._read(resp, call)
                return resp.status, call, body
        except RemoteError:
            raise
        except TimeoutError:
            raise RemoteError(call, "no complete answer in time") from None
        except RefusedAddress as exc:
            raise RemoteError(call, f"refused: {exc}") from None
        except aiohttp.ClientConnectorError as exc:
            if isinstance(exc.os_error, RefusedAddress):
                raise RemoteError(call, f"refused: {exc.os_error}") from None
            if isinstance(exc, aiohttp.ClientConnectorDNSError):
                raise RemoteError(call, "the host name does not resolve") from None
            reason = exc.os_error.strerror or str(exc.os_error)
            raise RemoteError(call, f"cannot connect: {reason}") from None
        except aiohttp.ClientPayloadError:
            raise RemoteError(call, "the answer was cut off before its end") from None
        except aiohttp.ServerDisconnectedError:
            raise RemoteError(call, "the server closed the connection without an answer") from None
        except (aiohttp.ClientError, ValueError) as exc:
            raise RemoteError(call, f"the request failed: {type(exc).__name__}") from None

    async def _read(self, resp: aiohttp.ClientResponse, call: str) -> bytes:
        if resp.content_length is not None and resp.content_length > MAX_ANSWER_BYTES:
            raise RemoteError(call, f"the answer is larger than {MAX_ANSWER_BYTES >> 20} MiB")
        body = bytearray()
        async for chunk in resp.content.iter_chunked(1 << 16):
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                raise RemoteError(call, f"the answer is larger than {MAX_ANSWER_BYTES >> 20} MiB")
        return bytes(body)

    def _name(self, method: str, path: str, query: dict[str, str] | None = None) -> str:
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


def _basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def _quote(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _feed_of(item: Any) -> Any:
    """A feed URL from the simple API's list: a string, or an object with it."""
    if isinstance(item, dict):
        return item.get("url") or item.get("feed")
    return item


def _merge(lists: list[tuple[list[Any], list[Any]]], devices: int) -> RemoteSubscriptions:
    """One account-wide list from every device's: subscribed when any device has it,
    unsubscribed when some device removed it and none has it."""
    subscribed = list(dict.fromkeys(u for add, _ in lists for u in add if isinstance(u, str)))
    have = set(subscribed)
    unsubscribed = [
        u
        for u in dict.fromkeys(u for _, rem in lists for u in rem if isinstance(u, str))
        if u not in have
    ]
    return RemoteSubscriptions(subscribed, unsubscribed, devices)
