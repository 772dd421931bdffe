"""A podcast host for the listening tests in a browser: a threaded http.server on
127.0.0.1 serving a feed whose enclosures are WAV files on the same host, with
HTTP Range requests answered (206 and Content-Range) as podcast CDNs do, so that a
browser's player can start in the middle and seek."""

from __future__ import annotations

import contextlib
import http.server
import re
import struct
import threading
from collections import Counter
from email.utils import formatdate
from xml.sax.saxutils import escape

ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd"
PSC = "http://podlove.org/simple-chapters"
PODCAST = "https://podcastindex.org/namespace/1.0"
RATE = 8000  # samples a second, 8-bit mono: 8 kB a second
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def wav(seconds: int) -> bytes:
    """A quiet tone of `seconds` (8-bit PCM, mono, 8 kHz)."""
    samples = bytes(128 + (16 if (n // 20) % 2 else -16) for n in range(RATE)) * seconds
    header = b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVE"
    fmt = b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, RATE, RATE, 1, 8)
    return header + fmt + b"data" + struct.pack("<I", len(samples)) + samples


class MediaHost:
    """`episodes`: (title, seconds) newest first; the feed is /show.xml, episode n's
    file /n.wav, its page /n.html. `ranges` lists the Range headers asked for."""

    def __init__(
        self,
        title: str,
        episodes: list[tuple[str, int]],
        notes: dict[int, str] | None = None,
        item_xml: dict[int, str] | None = None,
        documents: dict[str, tuple[str, bytes]] | None = None,
    ) -> None:
        self.title = title
        self.episodes = episodes
        self.notes = notes or {}  # more HTML for episode n's show notes
        self.item_xml = item_xml or {}  # more XML in episode n's item (chapters)
        self.documents = documents or {}  # path: (content type, body), chapters JSON
        self.files = {f"/{n}.wav": wav(s) for n, (_, s) in self.numbered()}
        self.hits: Counter[str] = Counter()
        self.ranges: list[str] = []
        host = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                host.hits[self.path] += 1
                if self.path == "/show.xml":
                    self._send(200, "application/rss+xml", host.feed())
                    return
                if self.path in host.documents:
                    self._send(200, *host.documents[self.path])
                    return
                body = host.files.get(self.path)
                if body is None:
                    self._send(404, "text/plain", b"no")
                    return
                asked = self.headers.get("Range")
                if asked is None:
                    self._send(200, "audio/wav", body)
                    return
                host.ranges.append(asked)
                found = _RANGE.fullmatch(asked.strip())
                if found is None or not (found.group(1) or found.group(2)):
                    self._send(416, "text/plain", b"", {"Content-Range": f"bytes */{len(body)}"})
                    return
                if found.group(1):
                    first = int(found.group(1))
                    last = int(found.group(2)) if found.group(2) else len(body) - 1
                else:  # the last N bytes
                    first, last = max(0, len(body) - int(found.group(2))), len(body) - 1
                last = min(last, len(body) - 1)
                if first > last:
                    self._send(416, "text/plain", b"", {"Content-Range": f"bytes */{len(body)}"})
                    return
                self._send(
                    206,
                    "audio/wav",
                    body[first : last + 1],
                    {"Content-Range": f"bytes {first}-{last}/{len(body)}"},
                )

            def _send(
                self, status: int, kind: str, body: bytes, extra: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Accept-Ranges", "bytes")
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                # The browser may hang up once it has what it needed.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def numbered(self) -> list[tuple[int, tuple[str, int]]]:
        return [(len(self.episodes) - i, e) for i, e in enumerate(self.episodes)]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def feed(self) -> bytes:
        items = []
        for n, (title, seconds) in self.numbered():
            minutes, secs = divmod(seconds, 60)
            items.append(
                f'<item><title>{escape(title)}</title><guid isPermaLink="false">ep-{n}</guid>'
                f"<link>{escape(self.url(f'/{n}.html'))}</link>"
                f"<pubDate>{formatdate(1_763_000_000 + n * 86400, usegmt=True)}</pubDate>"
                f'<enclosure url="{escape(self.url(f"/{n}.wav"))}" '
                f'length="{len(self.files[f"/{n}.wav"])}" type="audio/wav"/>'
                f"<description>{escape(f'<p>Notes of <em>{title}</em>.</p><ul><li>one</li></ul>')}"
                f"{escape(self.notes.get(n, ''))}"
                f"</description><itunes:duration>{minutes:02d}:{secs:02d}</itunes:duration>"
                f"{self.item_xml.get(n, '')}</item>"
            )
        return (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" xmlns:itunes="{ITUNES}" '
            f'xmlns:psc="{PSC}" xmlns:podcast="{PODCAST}">'
            f"<channel><title>{escape(self.title)}</title><link>{self.url('/')}</link>"
            f"<description>A show</description>{''.join(items)}</channel></rss>"
        ).encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
