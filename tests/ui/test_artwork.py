"""Feeds' artwork kept by podsync (webui rev. 3, point 5), against feeds and images
served on 127.0.0.1: fetched with the feed, image types only by their first bytes,
size-capped, one copy per distinct image, a conditional GET when the feed changed
and nothing when it did not, the old image kept when a new one fails, the store's
total bounded, the address checks of the fetcher, and the pages loading it from
podsync's own address with long cache headers (signed-in people only).

Subscriptions go through the real API; the fetcher runs on its own connection to
the same database, one pass at a time, as the server's background task does."""

from __future__ import annotations

import hashlib
import re
import struct
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from podsync.config import ConfigError, load_config
from podsync.services.feeds.fetcher import FeedFetcher
from podsync.services.feeds.http import FeedClient
from podsync.storage.engine import Engine
from tests.support.feed_site import rss
from tests.support.ui_session import Browser
from tests.ui.test_feed_fetcher import (
    WINDOW,
    Client,
    Clock,
    StubResolver,
    alice,  # noqa: F401 - a fixture
    client,  # noqa: F401 - a fixture
    clock,  # noqa: F401 - a fixture
    db,  # noqa: F401 - a fixture
    fetch_pass,
    info,
    only_127_0_0_1_is_public,
    subscribe,
)

pytestmark = pytest.mark.both_engines


def png(width: int, height: int, rgb: tuple[int, int, int] = (42, 85, 201)) -> bytes:
    """A real PNG of one colour (the browser tests draw it)."""
    row = b"\x00" + bytes(rgb) * width
    raw = zlib.compress(row * height)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x00" * 200
GIF = b"GIF89a" + b"\x01\x00\x01\x00" + b"\x00" * 30
HTML = b"<!doctype html><p>hello"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


class ArtSite:
    """Feeds whose artwork a test sets, and the images, on 127.0.0.1. A feed's body
    changes (and its ETag with it) when `bump` is called; an image answers 304 to
    its own ETag. `hits` and `seen` count and keep every request."""

    def __init__(self) -> None:
        self.artwork: dict[str, str | None] = {}  # feed name -> artwork URL
        self.version: Counter[str] = Counter()
        self.images: dict[str, tuple[str, bytes]] = {}  # path -> (type, bytes)
        self.hits: Counter[str] = Counter()
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.server: TestServer | None = None

    def url(self, path: str) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}{path}"

    def bump(self, name: str) -> None:
        self.version[name] += 1

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/feed/{name}.xml", self._feed)
        app.router.add_get("/img/{name}", self._image)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    async def _feed(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.hits[request.path] += 1
        etag = f'"{name}-{self.version[name]}"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        body = rss(f"Show {name}", 3 + self.version[name], artwork=self.artwork.get(name))
        return web.Response(body=body, content_type="application/rss+xml", headers={"ETag": etag})

    async def _image(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        self.seen.append((request.path, dict(request.headers)))
        found = self.images.get(request.path)
        if found is None:
            return web.Response(status=404, text="no")
        kind, body = found
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        return web.Response(body=body, headers={"Content-Type": kind, "ETag": etag})


@pytest.fixture
async def art() -> AsyncIterator[ArtSite]:
    site = ArtSite()
    await site.start()
    yield site
    await site.close()


@pytest.fixture
async def fetcher_with(
    db: Engine,  # noqa: F811
    clock: Clock,  # noqa: F811
) -> AsyncIterator[Callable[..., FeedFetcher]]:
    made: list[FeedFetcher] = []

    def make(http: FeedClient | None = None, **options: Any) -> FeedFetcher:
        fetcher = FeedFetcher(
            db, http or FeedClient(allow_private=True), refresh_hours=24, clock=clock, **options
        )
        made.append(fetcher)
        return fetcher

    yield make
    for fetcher in made:
        await fetcher.close()


async def stored(db: Engine) -> list[tuple[str, str, int]]:  # noqa: F811
    async with db.read() as conn:
        rows = await conn.fetch_all("SELECT hash, content_type, size FROM artwork ORDER BY hash")
    return [(str(h), str(t), int(s)) for h, t, s in rows]


def sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


async def test_an_http_image_is_kept_and_served_from_podsyncs_own_address(
    client: Client,  # noqa: F811
    alice: str,  # noqa: F811
    art: ArtSite,
    db: Engine,  # noqa: F811
    fetcher_with: Callable[..., FeedFetcher],
) -> None:
    image = png(40, 40)
    art.images["/img/cover.png"] = ("image/png", image)
    art.artwork["a"] = art.url("/img/cover.png")  # plain http
    await subscribe(client, alice, art.url("/feed/a.xml"))
    assert await fetch_pass(fetcher_with()) == 1
    digest = sha(image)
    assert (await info(db, art.url("/feed/a.xml"))).artwork_hash == digest
    assert await stored(db) == [(digest, "image/png", len(image))]
    # Fetched as a feed is: podsync's User-Agent, no Referer, asking for images.
    [(_, headers)] = art.seen
    assert headers["User-Agent"].startswith("podsync/") and "Referer" not in headers
    assert headers["Accept"].startswith("image/")
    base = str(client.make_url(""))
    browser = Browser(base)
    try:
        status, _ = await browser.page(f"/ui/artwork/{digest}")
        assert status == 303  # behind the sign-in, as every page
        await browser.sign_in("alice")
        status, page = await browser.page("/ui/subscriptions")
        assert f'src="/ui/artwork/{digest}"' in page
        assert art.url("/img/") not in page  # the browser is sent nowhere else
        async with browser.http.get(base + f"/ui/artwork/{digest}") as answer:
            assert answer.status == 200 and await answer.read() == image
            assert answer.headers["Content-Type"] == "image/png"
            assert answer.headers["Cache-Control"] == "private, max-age=31536000, immutable"
            assert answer.headers["ETag"] == f'"{digest}"'
            assert answer.headers["X-Content-Type-Options"] == "nosniff"
            assert "sandbox" in answer.headers["Content-Security-Policy"]
        again = {"If-None-Match": f'"{digest}"'}
        async with browser.http.get(base + f"/ui/artwork/{digest}", headers=again) as answer:
            assert answer.status == 304 and await answer.read() == b""
        for missing in ("0" * 64, "not-a-hash", digest.upper()):
            async with browser.http.get(base + f"/ui/artwork/{missing}") as answer:
                assert answer.status == 404, missing
        async with browser.http.get(base + "/ui/subscriptions") as answer:
            csp = answer.headers["Content-Security-Policy"]
        # Images from podsync only (media, the player's audio, may come from anywhere).
        img_src = next(d for d in csp.split(";") if d.strip().startswith("img-src"))
        assert img_src.strip() == "img-src 'self' data:"
    finally:
        await browser.close()


async def test_one_copy_per_image_and_it_goes_with_the_last_feed_naming_it(
    client: Client,  # noqa: F811
    alice: str,  # noqa: F811
    art: ArtSite,
    db: Engine,  # noqa: F811
    clock: Clock,  # noqa: F811
    fetcher_with: Callable[..., FeedFetcher],
) -> None:
    network, own = png(8, 8), png(9, 9)
    art.images["/img/network.png"] = ("image/png", network)
    art.images["/img/same-bytes.png"] = ("image/png", network)
    art.images["/img/own.png"] = ("image/png", own)
    art.artwork = {"a": art.url("/img/network.png"), "b": art.url("/img/same-bytes.png")}
    await subscribe(client, alice, art.url("/feed/a.xml"), art.url("/feed/b.xml"))
    fetcher = fetcher_with()
    await fetch_pass(fetcher)
    assert await stored(db) == [(sha(network), "image/png", len(network))]
    # a names an image of its own: both kept, b still has the shared one.
    art.artwork["a"] = art.url("/img/own.png")
    art.bump("a")
    clock.now += WINDOW
    await fetcher.run_once()
    assert sorted(h for h, _, _ in await stored(db)) == sorted([sha(network), sha(own)])
    # b names none any more: its image goes, nobody names it.
    art.artwork["b"] = None
    art.bump("b")
    clock.now += WINDOW
    await fetcher.run_once()
    assert await stored(db) == [(sha(own), "image/png", len(own))]
    assert (await info(db, art.url("/feed/b.xml"))).artwork_hash is None


async def test_a_conditional_get_when_the_feed_changed_and_nothing_when_it_did_not(
    client: Client,  # noqa: F811
    alice: str,  # noqa: F811
    art: ArtSite,
    db: Engine,  # noqa: F811
    clock: Clock,  # noqa: F811
    fetcher_with: Callable[..., FeedFetcher],
) -> None:
    first, second = png(10, 10), png(11, 11)
    art.images["/img/cover.png"] = ("image/png", first)
    art.artwork["a"] = art.url("/img/cover.png")
    await subscribe(client, alice, art.url("/feed/a.xml"))
    fetcher = fetcher_with()
    await fetch_pass(fetcher)
    assert art.hits["/img/cover.png"] == 1
    # A window later the feed answers 304: the image is not asked for at all.
    clock.now += WINDOW
    await fetcher.run_once()
    assert art.hits["/feed/a.xml"] == 2 and art.hits["/img/cover.png"] == 1
    # The feed changed: one conditional GET of the image, answered 304.
    art.bump("a")
    clock.now += WINDOW
    await fetcher.run_once()
    assert art.hits["/img/cover.png"] == 2
    assert art.seen[-1][1]["If-None-Match"] == '"' + sha(first)[:16] + '"'
    assert (await info(db, art.url("/feed/a.xml"))).artwork_hash == sha(first)
    # The image changed at the same address: the next feed change brings it.
    art.images["/img/cover.png"] = ("image/png", second)
    art.bump("a")
    clock.now += WINDOW
    await fetcher.run_once()
    assert (await info(db, art.url("/feed/a.xml"))).artwork_hash == sha(second)
    assert [h for h, _, _ in await stored(db)] == [sha(second)]


@pytest.mark.parametrize(
    ("kind", "body", "error"),
    [
        ("text/html", HTML, "the artwork's address answers with text/html, not an image"),
        ("image/svg+xml", SVG, "SVG artwork is not kept (an SVG file can carry script)"),
        ("image/png", HTML, "the artwork is not a JPEG, PNG, GIF or WebP image"),
        ("image/png", png(100, 100) + b"\x00" * 4096, "the artwork is larger than 4 KiB"),
    ],
)
async def test_what_is_not_an_image_or_too_large_leaves_the_old_one(
    client: Client,  # noqa: F811
    alice: str,  # noqa: F811
    art: ArtSite,
    db: Engine,  # noqa: F811
    clock: Clock,  # noqa: F811
    fetcher_with: Callable[..., FeedFetcher],
    kind: str,
    body: bytes,
    error: str,
) -> None:
    old = png(12, 12)
    art.images["/img/old.png"] = ("image/png", old)
    art.images["/img/new"] = (kind, body)
    art.artwork["a"] = art.url("/img/old.png")
    await subscribe(client, alice, art.url("/feed/a.xml"))
    fetcher = fetcher_with(artwork_max_bytes=4096)
    await fetch_pass(fetcher)
    art.artwork["a"] = art.url("/img/new")
    art.bump("a")
    clock.now += WINDOW
    await fetcher.run_once()
    feed = art.url("/feed/a.xml")
    assert (await info(db, feed)).artwork_hash == sha(old)  # the old one stays
    async with db.read() as conn:
        row = await conn.fetch_one(
            "SELECT artwork_error, artwork_source FROM feed_info WHERE artwork_hash = ?",
            (sha(old),),
        )
    assert row is not None and (row[0], row[1]) == (error, art.url("/img/new"))
    assert [h for h, _, _ in await stored(db)] == [sha(old)]
    # The feed itself is fine: its title and episodes were kept.
    assert (await info(db, feed)).title == "Show a" and (await info(db, feed)).last_error is None


async def test_other_image_types_by_their_first_bytes_whatever_they_are_called(
    client: Client,  # noqa: F811
    alice: str,  # noqa: F811
    art: ArtSite,
    db: Engine,  # noqa: F811
    fetcher_with: Callable[..., FeedFetcher],
) -> None:
    webp = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 40
    art.images.update(
        {
            "/img/a.jpg": ("image/jpeg", JPEG),
            "/img/b": ("application/octet-stream", GIF),  # a CDN that types nothing
            "/img/c.png": ("image/png", webp),  # a WebP called PNG
        }
    )
    art.artwork = {"a": art.url("/img/a.jpg"), "b": art.url("/img/b"), "c": art.url("/img/c.png")}
    await subscribe(client, alice, *(art.url(f"/feed/{n}.xml") for n in "abc"))
    await fetch_pass(fetcher_with())
    assert sorted((t, s) for _, t, s in await stored(db)) == sorted(
        [("image/jpeg", len(JPEG)), ("image/gif", len(GIF)), ("image/webp", len(webp))]
    )


async def test_the_store_is_bounded_in_all(
    client: Client,  # noqa: F811
    alice: str,  # noqa: F811
    art: ArtSite,
    db: Engine,  # noqa: F811
    fetcher_with: Callable[..., FeedFetcher],
) -> None:
    first, second = png(30, 30), png(31, 31)
    art.images["/img/1.png"] = ("image/png", first)
    art.images["/img/2.png"] = ("image/png", second)
    art.artwork = {"a": art.url("/img/1.png"), "b": art.url("/img/2.png")}
    await subscribe(client, alice, art.url("/feed/a.xml"))
    fetcher = fetcher_with(artwork_store_bytes=len(first) + len(second) - 1)
    await fetch_pass(fetcher)
    await subscribe(client, alice, art.url("/feed/b.xml"))
    await fetcher.run_once()
    assert [h for h, _, _ in await stored(db)] == [sha(first)]
    assert (await info(db, art.url("/feed/b.xml"))).artwork_hash is None
    async with db.read() as conn:
        row = await conn.fetch_one(
            "SELECT artwork_error FROM feed_info WHERE artwork_source = ?", (art.url("/img/2.png"),)
        )
    assert row is not None and row[0] == "podsync's artwork store is full (feeds.artwork_store_mib)"


async def test_artwork_on_a_private_address_is_refused_before_any_connection(
    client: Client,  # noqa: F811
    alice: str,  # noqa: F811
    art: ArtSite,
    db: Engine,  # noqa: F811
    fetcher_with: Callable[..., FeedFetcher],
) -> None:
    """The feed on a public address (here: 127.0.0.1 stands in for one) names an image
    on a private one: refused as a feed there would be, nothing connects to it."""
    assert art.server is not None
    art.artwork["a"] = f"http://private.test:{art.server.port}/img/x.png"
    art.images["/img/x.png"] = ("image/png", png(5, 5))
    await subscribe(client, alice, art.url("/feed/a.xml"))
    strict = FeedClient(False, is_allowed=only_127_0_0_1_is_public, resolver=StubResolver())
    await fetch_pass(fetcher_with(strict))
    assert art.hits["/img/x.png"] == 0 and await stored(db) == []
    async with db.read() as conn:
        row = await conn.fetch_one("SELECT artwork_error FROM feed_info")
    assert row is not None and re.fullmatch(
        r"refused: private\.test resolves to no public address.*", str(row[0])
    ), row


async def test_no_artwork_is_kept_when_the_cap_is_zero(
    client: Client,  # noqa: F811
    alice: str,  # noqa: F811
    art: ArtSite,
    db: Engine,  # noqa: F811
    fetcher_with: Callable[..., FeedFetcher],
) -> None:
    art.images["/img/cover.png"] = ("image/png", png(6, 6))
    art.artwork["a"] = art.url("/img/cover.png")
    await subscribe(client, alice, art.url("/feed/a.xml"))
    await fetch_pass(fetcher_with(artwork_max_bytes=0))
    assert art.hits["/img/cover.png"] == 0 and await stored(db) == []
    assert (await info(db, art.url("/feed/a.xml"))).title == "Show a"


def test_the_limits_are_settings_and_out_of_range_ones_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "podsync.toml"
    path.write_text(f'[database]\npath = "{tmp_path}/db"\n[feeds]\nartwork_max_kib = 256\n')
    config = load_config(path, environ={"PODSYNC_FEEDS_ARTWORK_STORE_MIB": "64"})
    assert (config.feeds.artwork_max_kib, config.feeds.artwork_store_mib) == (256, 64)
    for name, value, said in (
        ("MAX_KIB", "-1", "feeds.artwork_max_kib must be between 0 and 16384, not -1"),
        ("MAX_KIB", "16385", "feeds.artwork_max_kib must be between 0 and 16384, not 16385"),
        ("STORE_MIB", "0", "feeds.artwork_store_mib must be at least 1, not 0"),
    ):
        with pytest.raises(ConfigError, match=re.escape(said)):
            load_config(path, environ={f"PODSYNC_FEEDS_ARTWORK_{name}": value})
