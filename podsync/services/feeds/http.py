"""Fetching one feed within firm limits, with aiohttp's client.

Conditional GET (ETag, Last-Modified; a 304 keeps what was learned), one time limit
for the whole fetch (every redirect and the body included), a cap on the body as it
arrives (decompressed: a small gzip bomb is stopped at the cap), at most a few
redirects, followed here rather than by aiohttp so that every hop's scheme and
address are checked (`addresses`), and a User-Agent that names podsync.

A fault of the host rather than of the feed (its name does not resolve, or only to
addresses refused; its port refuses the connection, its network is unreachable) is
noted in the pass's `HostFaults` when one is given: the pass's other feeds on that
host then fail the same way without a lookup or a connection of their own, for a
minute. A 404, a timeout or a bad body stays the feed's own.
"""

from __future__ import annotations

import asyncio
import errno
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from aiohttp.abc import AbstractResolver
from yarl import URL

from podsync import __version__
from podsync.services.feeds.addresses import (
    AddressPolicy,
    PublicOnlyResolver,
    RefusedAddress,
    check_literal,
    is_public,
)
from podsync.services.feeds.refusals import refused

USER_AGENT = f"podsync/{__version__} (feed titles and artwork)"
ACCEPT = (
    "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"
)
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Connection errors that say the address, not the feed, is out of reach.
_UNREACHABLE = frozenset({errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH})
# How long a host's fault stands for the other feeds of a pass: long enough for a
# flood of thousands of feeds on one host, short enough that a passing DNS hiccup
# does not fail a large host's feeds for a whole refresh window.
HOST_FAULT_S = 60.0


@dataclass(frozen=True, slots=True)
class Limits:
    timeout_s: float = 10.0  # the whole fetch, redirects and body included
    max_body_bytes: int = 5 << 20  # 5 MiB, after decompression
    max_redirects: int = 5


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetch that succeeded: 200 with a body, or 304 (not modified) without one."""

    url: str  # where the body came from, after redirects (for relative links)
    not_modified: bool
    body: bytes
    content_type: str
    etag: str | None
    last_modified: str | None


@dataclass(frozen=True, slots=True)
class Body:
    """What a fetch asks for: its Accept header (None: the client's, for feeds), its
    size cap (0: `Limits.max_body_bytes`) and what a refusal calls it."""

    accept: str | None = None
    max_bytes: int = 0
    noun: str = "feed"


FEED = Body()


class FetchError(Exception):
    """Why a fetch failed, in words fit for the subscriptions page (no secrets: never
    the URL, which may carry credentials)."""


class HttpStatusError(FetchError):
    """The feed's server answered, with a status other than 200, 304 or a redirect."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class HostFaults:
    """The hosts found failing during one pass of the fetcher, with the reason each
    failed for: by name (does not resolve, resolves to refused addresses) and by name
    and port (connection refused, unreachable). Each fault stands HOST_FAULT_S."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._faults: dict[tuple[str, int | None], tuple[float, str]] = {}

    def reason(self, target: URL) -> str | None:
        """Why `target`'s host failed a moment ago, else None."""
        now = self._clock()
        for key in ((target.host or "").lower(), None), ((target.host or "").lower(), target.port):
            found = self._faults.get(key)
            if found is not None:
                if found[0] > now:
                    return found[1]
                del self._faults[key]
        return None

    def add(self, target: URL, by_port: bool, reason: str) -> None:
        key = ((target.host or "").lower(), target.port if by_port else None)
        self._faults[key] = (self._clock() + HOST_FAULT_S, reason)


class FeedClient:
    """One HTTP client for all fetches of a process; `open()` before use.

    `allow_private` turns the address checks off (tests serve feeds on 127.0.0.1).
    `is_allowed` and `resolver` exist for tests of the checks themselves: which
    addresses count as public, and the system resolver's stand-in."""

    def __init__(
        self,
        allow_private: bool = False,
        limits: Limits | None = None,
        *,
        is_allowed: AddressPolicy = is_public,
        resolver: AbstractResolver | None = None,
    ) -> None:
        self.allow_private = allow_private
        self.limits = limits or Limits()
        self.is_allowed = is_allowed
        self._resolver = resolver
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        resolver: AbstractResolver | None = self._resolver
        if not self.allow_private:
            resolver = PublicOnlyResolver(resolver, self.is_allowed)
        connector = aiohttp.TCPConnector(resolver=resolver, limit=16, limit_per_host=2)
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),  # nothing carried from one feed to another
            headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
            timeout=aiohttp.ClientTimeout(total=self.limits.timeout_s),
            trust_env=False,  # no proxy from the environment: connect to the checked address
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def fetch(
        self,
        url: str,
        etag: str | None,
        last_modified: str | None,
        faults: HostFaults | None = None,
        *,
        body: Body = FEED,
    ) -> Fetched:
        """GET `url` (conditionally when `etag` or `last_modified` are known); raise
        FetchError with the reason on any failure. With `faults`, a host found failing
        a moment ago fails again at once, and a host that fails is noted there.
        `body`: what is asked for (the Accept header) and its size cap (a feed's by
        default: `limits.max_body_bytes`)."""
        hops: list[URL] = []
        try:
            async with asyncio.timeout(self.limits.timeout_s):
                return await self._follow(url, etag, last_modified, hops, faults, body)
        except TimeoutError:
            raise FetchError(f"no complete answer within {self.limits.timeout_s:g} s") from None
        except RefusedAddress as exc:
            raise FetchError(refused(str(exc))) from None
        except aiohttp.ClientSSLError:
            raise FetchError("the TLS connection failed (certificate or handshake)") from None
        except aiohttp.ClientConnectorError as exc:
            # The resolver's refusal arrives wrapped as a DNS error.
            if isinstance(exc.os_error, RefusedAddress):
                reason, by_port = refused(str(exc.os_error)), False
            elif isinstance(exc, aiohttp.ClientConnectorDNSError):
                reason, by_port = "the host name does not resolve", False
            else:
                reason = f"cannot connect: {exc.os_error.strerror or exc.os_error}"
                if exc.os_error.errno not in _UNREACHABLE:
                    raise FetchError(reason) from None
                by_port = True
            if faults is not None and hops:
                faults.add(hops[-1], by_port, reason)
            raise FetchError(reason) from None
        except aiohttp.ClientPayloadError:
            raise FetchError("the answer was cut off or badly encoded") from None
        except (aiohttp.ClientError, ValueError) as exc:
            raise FetchError(f"the request failed: {type(exc).__name__}") from None

    async def _follow(
        self,
        url: str,
        etag: str | None,
        last_modified: str | None,
        hops: list[URL],
        faults: HostFaults | None,
        wanted: Body,
    ) -> Fetched:
        assert self._session is not None, "FeedClient.open() first"
        headers = {"Accept": wanted.accept} if wanted.accept else {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        target = URL(url)
        seen = {target}
        for _ in range(self.limits.max_redirects + 1):
            self._check(target)
            known = None if faults is None else faults.reason(target)
            if known is not None:
                raise FetchError(known)
            hops.append(target)
            async with self._session.get(target, headers=headers, allow_redirects=False) as resp:
                if resp.status in _REDIRECTS:
                    location = resp.headers.get("Location")
                    if not location:
                        raise FetchError(f"HTTP {resp.status} without a Location")
                    target = resp.url.join(URL(location))
                    if target in seen:
                        raise FetchError("the redirects go round in a loop")
                    seen.add(target)
                    continue
                if resp.status == 304:
                    return Fetched(str(resp.url), True, b"", "", etag, last_modified)
                if resp.status != 200:
                    raise HttpStatusError(resp.status)
                body = await self._read(resp, wanted)
                return Fetched(
                    str(resp.url),
                    False,
                    body,
                    resp.headers.get("Content-Type", ""),
                    resp.headers.get("ETag"),
                    resp.headers.get("Last-Modified"),
                )
        raise FetchError(f"more than {self.limits.max_redirects} redirects")

    def _check(self, target: URL) -> None:
        if target.scheme not in ("http", "https") or not target.host:
            raise FetchError("a redirect leads to a URL that is not http(s)")
        if not self.allow_private:
            check_literal(target.host, self.is_allowed)

    async def _read(self, resp: aiohttp.ClientResponse, wanted: Body) -> bytes:
        cap = wanted.max_bytes or self.limits.max_body_bytes
        if cap >= 1 << 20:
            size = f"{cap / (1 << 20):g} MiB"
        else:
            size = f"{cap >> 10} KiB" if cap >= 1024 and cap % 1024 == 0 else f"{cap} bytes"
        too_big = FetchError(f"the {wanted.noun} is larger than {size}")
        if resp.content_length is not None and resp.content_length > cap:
            raise too_big
        body = bytearray()
        async for chunk in resp.content.iter_chunked(1 << 16):
            body += chunk
            if len(body) > cap:
                raise too_big
        return bytes(body)
