"""A podcast host for the feed fetcher's tests: an aiohttp server on 127.0.0.1 that
serves feeds, slow and huge answers, redirects of every kind and pages that are not
feeds, and counts every request it gets."""

from __future__ import annotations

import asyncio
import gzip
from collections import Counter
from email.utils import formatdate
from xml.sax.saxutils import escape, quoteattr

from aiohttp import web
from aiohttp.test_utils import TestServer

ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd"
NOTES = escape('<p>Show notes with <a href="https://x.example/">links</a>.</p>' * 5)


def rss(
    title: str = "The Show",
    episodes: int = 100,
    *,
    link: str = "https://show.example/",
    artwork: str | None = "https://cdn.show.example/art.jpg",
    rss_image: str | None = None,
    prefix: str = "Episode",
    first: int = 1,
    dated: bool = True,
) -> bytes:
    """A typical podcast feed: `episodes` items numbered from `first`, each with a
    guid and an enclosure, a description and iTunes fields (and a pubDate, a day
    apart, when `dated`), newest first."""
    items = []
    for n in range(first + episodes - 1, first - 1, -1):
        date = f"<pubDate>{formatdate(1_700_000_000 + n * 86400, usegmt=True)}</pubDate>"
        items.append(
            f"<item><title>{escape(f'{prefix} {n}: a conversation about things')}</title>"
            f'<guid isPermaLink="false">show-{n}</guid>'
            f"<link>https://show.example/{n}</link>"
            + (date if dated else "")
            + f'<enclosure url="https://cdn.show.example/{n}.mp3" length="{n * 1000}" '
            'type="audio/mpeg"/>'
            f"<description>{NOTES}</description>"
            f"<itunes:duration>00:{n % 60:02d}:00</itunes:duration>"
            "<itunes:explicit>false</itunes:explicit></item>"
        )
    image = f"<itunes:image href={quoteattr(artwork)}/>" if artwork else ""
    if rss_image:
        image += f"<image><url>{escape(rss_image)}</url><title>x</title><link>{link}</link></image>"
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" xmlns:itunes="{ITUNES}">'
        f"<channel><title>{escape(title)}</title><link>{escape(link)}</link>"
        f"<description>About the show</description><language>en</language>{image}"
        + "".join(items)
        + "</channel></rss>"
    ).encode()


def atom(title: str = "An Atom Show") -> bytes:
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>{escape(title)}</title><id>urn:uuid:atom-show</id>"
        '<link rel="alternate" href="https://atom.example/"/>'
        "<logo>https://atom.example/logo.png</logo><updated>2026-01-01T00:00:00Z</updated>"
        "<entry><title>First entry</title><id>urn:uuid:entry-1</id>"
        '<link rel="enclosure" href="https://atom.example/1.ogg" type="audio/ogg"/>'
        "<updated>2026-01-01T00:00:00Z</updated></entry></feed>"
    ).encode()


class FeedSite:
    """The server's behaviour, changeable by a test; `hits` counts requests by path."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.headers_seen: list[dict[str, str]] = []
        self.feed = rss()
        self.etag = '"v1"'
        self.last_modified = formatdate(1_700_000_000, usegmt=True)
        self.server: TestServer | None = None
        self.missing_is_back = False  # /missing.xml serves the feed from then on

    @property
    def port(self) -> int:
        assert self.server is not None and self.server.port is not None
        return self.server.port

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    async def start(self) -> None:
        app = web.Application()
        app.middlewares.append(self._count)
        app.router.add_get("/show.xml", self._show)
        app.router.add_get("/atom.xml", self._atom)
        app.router.add_get("/slow.xml", self._slow)
        app.router.add_get("/huge.xml", self._huge)
        app.router.add_get("/huge-declared.xml", self._huge_declared)
        app.router.add_get("/gzip-bomb.xml", self._gzip_bomb)
        app.router.add_get("/page.html", self._page)
        app.router.add_get("/missing.xml", self._missing)
        app.router.add_get("/hop/{n}", self._hop)
        app.router.add_get("/loop-a", self._loop_a)
        app.router.add_get("/loop-b", self._loop_b)
        app.router.add_get("/to/{host}", self._to_host)
        self.server = TestServer(app, host="127.0.0.1")
        await self.server.start_server()

    async def close(self) -> None:
        if self.server is not None:
            await self.server.close()

    @web.middleware
    async def _count(self, request: web.Request, handler: web.Handler) -> web.StreamResponse:
        self.hits[request.path] += 1
        self.headers_seen.append(dict(request.headers))
        return await handler(request)

    async def _show(self, request: web.Request) -> web.Response:
        if request.headers.get("If-None-Match") == self.etag:
            return web.Response(status=304, headers={"ETag": self.etag})
        return web.Response(
            body=self.feed,
            content_type="application/rss+xml",
            headers={"ETag": self.etag, "Last-Modified": self.last_modified},
        )

    async def _atom(self, request: web.Request) -> web.Response:
        return web.Response(body=atom(), content_type="application/atom+xml")

    async def _slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.Response(body=rss(), content_type="application/rss+xml")

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        """6 MiB, chunked: no Content-Length warns the client."""
        response = web.StreamResponse()
        response.content_type = "application/rss+xml"
        await response.prepare(request)
        await response.write(b'<?xml version="1.0"?><rss version="2.0"><channel><title>Huge')
        filler = b" " * (1 << 16)
        for _ in range(96):
            await response.write(filler)
        await response.write_eof()
        return response

    async def _huge_declared(self, request: web.Request) -> web.Response:
        return web.Response(body=b" " * (6 << 20), content_type="application/rss+xml")

    async def _gzip_bomb(self, request: web.Request) -> web.Response:
        """6 KiB on the wire, 6 MiB once decompressed."""
        body = gzip.compress(b'<?xml version="1.0"?><rss version="2.0">' + b" " * (6 << 20))
        return web.Response(
            body=body, content_type="application/rss+xml", headers={"Content-Encoding": "gzip"}
        )

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(
            text="<!doctype html><html><head><title>Not a feed</title></head>"
            "<body><p>Welcome to our website</p></body></html>",
            content_type="text/html",
        )

    async def _missing(self, request: web.Request) -> web.Response:
        if self.missing_is_back:
            return await self._show(request)
        return web.Response(status=404, text="no such feed")

    async def _hop(self, request: web.Request) -> web.Response:
        """/hop/N redirects N more times, then to the feed."""
        n = int(request.match_info["n"])
        raise web.HTTPFound("/show.xml" if n <= 1 else f"/hop/{n - 1}")

    async def _loop_a(self, request: web.Request) -> web.Response:
        raise web.HTTPMovedPermanently("/loop-b")

    async def _loop_b(self, request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect("/loop-a")

    async def _to_host(self, request: web.Request) -> web.Response:
        """A redirect to the feed on another host name or address of this machine."""
        raise web.HTTPFound(f"http://{request.match_info['host']}:{self.port}/show.xml")


# A PNG's first bytes: what an image URL answers instead of a feed.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"


class ThreadedFeedHost:
    """The same kind of host for tests that cannot run an event loop of their own (the
    browser tests: playwright's sync API holds the thread's loop): a threaded
    http.server on 127.0.0.1 serving fixed answers, path -> (status, type, body).
    `refuse_foreign_referer`: a 403 to a request another site's page made (what an
    image host's hot-link protection does)."""

    def __init__(
        self, answers: dict[str, tuple[int, str, bytes]], refuse_foreign_referer: bool = False
    ) -> None:
        import http.server
        import threading
        import time

        self.answers = answers
        # Seconds to wait before answering a path, each taken once (a slow fetch).
        self.delays: dict[str, list[float]] = {}
        self.hits: Counter[str] = Counter()
        # Every request's path and headers, in order.
        self.requests: list[tuple[str, dict[str, str]]] = []
        host = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.hits[self.path] += 1
                host.requests.append((self.path, dict(self.headers.items())))
                waits = host.delays.get(self.path)
                if waits:
                    time.sleep(waits.pop(0))
                referer = self.headers.get("Referer")
                if refuse_foreign_referer and referer and not referer.startswith(host.url("/")):
                    # Hot-link protection: another site's page asks for an image.
                    status, kind, body = 403, "text/plain", b"no hot-linking"
                else:
                    status, kind, body = host.answers.get(self.path, (404, "text/plain", b"no"))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
