"""A feed's artwork, kept by podsync so that pages show it from podsync's own address:
an `http://` image shows on an https page, a host that refuses other sites' pages
(hot-link protection) never sees a browser, and no third party learns what a person
subscribes to when a list is drawn.

Fetched with the feed, by the same client (the same address checks after every
redirect, the same time limit, a User-Agent naming podsync, no Referer), at most
once per fetch of a feed and only when that fetch read the feed anew (a 304 fetches
nothing): when the feed names another image, by a conditional GET when the image's
own validators are known, else again after a while. What comes back is kept only if
it is an image by its first bytes (JPEG, PNG, GIF, WebP; never SVG, which can carry
script) and declared as an image (or as bytes of no particular type), within a size
cap, the store's total and the share of it each user's feeds may hold (an image new
to the store is kept when one of the feed's subscribers has room for it in their
share). Nothing is decoded: podsync stays free of image
libraries, and the browser scales the picture. An image that cannot be had leaves
the one kept before in place; the reason is kept beside it.

Each distinct image is stored once (by the SHA-256 of its bytes), whatever number of
feeds name it, and goes when no feed does.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from podsync import timestamps
from podsync.services.feeds.failures import shown
from podsync.services.feeds.http import Body, FeedClient, FetchError, HostFaults
from podsync.storage.engine import Connection
from podsync.store import artwork as store
from podsync.store.feed_info import DueFeed

log = logging.getLogger("podsync.feeds")

DAY_US = 86_400_000_000
# An image whose host gives no validators is fetched again this long after the last
# time (when the feed changes meanwhile), and a failed one after a day.
RECHECK_US = 7 * DAY_US
RETRY_US = DAY_US
ACCEPT = "image/webp, image/png, image/jpeg, image/gif;q=0.8"
# What a declared type may be besides an image type: bytes of no particular type.
_UNTYPED = frozenset({"", "application/octet-stream", "binary/octet-stream"})


class NotAnImage(ValueError):
    """What came back is not an image podsync keeps."""


def image_type(body: bytes) -> str | None:
    """The image type the first bytes show, or None."""
    if body.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if body.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if body.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(body) >= 12 and body.startswith(b"RIFF") and body[8:12] == b"WEBP":
        return "image/webp"
    return None


def checked_type(body: bytes, declared: str) -> str:
    """The type to serve `body` as: what its first bytes show, when its declared type
    is an image type or none in particular; NotAnImage with the reason otherwise."""
    main = declared.split(";", 1)[0].strip().lower()
    if main == "image/svg+xml":
        raise NotAnImage("SVG artwork is not kept (an SVG file can carry script)")
    if main not in _UNTYPED and not main.startswith("image/"):
        raise NotAnImage(f"the artwork's address answers with {main}, not an image")
    found = image_type(body)
    if found is None:
        raise NotAnImage("the artwork is not a JPEG, PNG, GIF or WebP image")
    return found


@dataclass(frozen=True, slots=True)
class Image:
    hash: str  # SHA-256 of the bytes, hex: its address under /ui/artwork/
    content_type: str
    body: bytes


def image_of(body: bytes, declared: str) -> Image:
    return Image(hashlib.sha256(body).hexdigest(), checked_type(body, declared), body)


def what_to_do(due: DueFeed, url: str | None, now: int) -> str:
    """What a feed read anew asks of its artwork, by what was kept of it: "clear" (it
    names none now), "fetch", "conditional" (a GET with the image's validators),
    or "" (nothing, yet)."""
    if url is None:
        return "clear" if due.artwork_hash or due.artwork_source else ""
    if url != due.artwork_source:
        return "fetch"
    if due.artwork_etag or due.artwork_last_modified:
        return "conditional"
    wait = RETRY_US if due.artwork_error or due.artwork_hash is None else RECHECK_US
    checked = due.artwork_checked_at
    return "fetch" if checked is None or now - checked >= wait else ""


@dataclass(frozen=True, slots=True)
class Found:
    """What a look at a feed's image found, to be recorded in the fetcher's next
    write: `image` (new bytes, or None: unchanged, a 304) with where it came from,
    or the `error` that kept it out; `forget` when the feed names no image now."""

    url: str | None
    image: Image | None = None
    kept: store.Kept | None = None
    error: str = ""

    @property
    def forget(self) -> bool:
        return self.url is None


class ArtworkKeeper:
    """Fetches feeds' artwork (the fetcher calls `look` after a feed was read anew,
    and `record` in the write that records the feed). `max_bytes` 0: none is kept."""

    def __init__(
        self,
        client: FeedClient,
        max_bytes: int,
        store_bytes: int,
        clock: Callable[[], int] = timestamps.now_us,
        share_bytes: int | None = None,
    ) -> None:
        self.client = client
        self.max_bytes = max_bytes
        self.store_bytes = store_bytes
        self.share_bytes = store_bytes if share_bytes is None else share_bytes
        self.clock = clock
        self._body = Body(accept=ACCEPT, max_bytes=max_bytes, noun="artwork")

    async def look(self, due: DueFeed, url: str | None, faults: HostFaults | None) -> Found | None:
        """Fetch the image the feed names when it asks for it (`what_to_do`); None:
        nothing to record. Never raises for the image's faults (they are in Found)."""
        if self.max_bytes <= 0:
            return None
        action = what_to_do(due, url, self.clock())
        if not action or url is None:
            return Found(None) if action else None
        conditional = action == "conditional"
        try:
            fetched = await self.client.fetch(
                url,
                due.artwork_etag if conditional else None,
                due.artwork_last_modified if conditional else None,
                faults,
                body=self._body,
            )
            image = None if fetched.not_modified else image_of(fetched.body, fetched.content_type)
        except (FetchError, NotAnImage) as exc:
            return Found(url, error=str(exc), kept=store.Kept(url, None, None, self.clock()))
        return Found(url, image, store.Kept(url, fetched.etag, fetched.last_modified, self.clock()))

    async def record(
        self, conn: Connection, url_key: str, found: Found, asking: int | None = None
    ) -> None:
        """Keep what `look` found (in a write). `asking`: the user who asked for the
        feed, counted among its subscribers for the shares (`store.Room`)."""
        if found.forget:
            await store.forget(conn, url_key)
            return
        assert found.kept is not None
        error = found.error
        if error:
            await store.failed(conn, url_key, found.kept.source, error, found.kept.at)
        elif found.image is None:
            await store.still(conn, url_key, found.kept)
        else:
            image = found.image
            room = store.Room(self.store_bytes, self.share_bytes, asking)
            error = await store.keep(
                conn, url_key, image.hash, image.content_type, image.body, found.kept, room
            ) or ""  # fmt: skip
        if error:
            log.debug("the artwork of the feed %s was not kept: %s", shown(url_key), error)
