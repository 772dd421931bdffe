"""Reading a fetched feed: title, website, artwork and episode titles.

feedparser reads RSS 0.9x/1.0/2.0 and Atom, forgives the broken feeds podcasts
publish, and decodes by the XML declaration and the HTTP charset. Three of its
habits matter here:
- `parse()` of a string or bytes value treats it as a URL or a file name when it
  looks like one and fetches or opens it; a body is always wrapped in BytesIO, so
  feedparser only ever reads the bytes this server fetched.
- Given the feed's address (Content-Location) it resolves relative URIs, guids
  included (`g1` becomes `https://host/g1`), while apps send the guid as written;
  so it is given no address and links are resolved here.
- It sanitises HTML in text fields but keeps the markup; a title is shown as text,
  so markup is reduced to its text.
Everything kept is bounded in length and count and free of control characters.
"""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import feedparser

from podsync.store.feed_info import LearnedFeed

MAX_TITLE = 500
MAX_URL = 2048
MAX_GUID = 512
MAX_EPISODES = 5000  # a feed's items kept for the history page (newest first in most feeds)
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]+")
_SPACES = re.compile(r"\s+")
_MARKUP_TYPES = ("text/html", "application/xhtml+xml")


class NotAFeed(ValueError):
    """The body is not an RSS or Atom feed."""


class _TextOf(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _plain(value: Any, detail: Any = None, limit: int = MAX_TITLE) -> str | None:
    """One line of text: markup reduced to its text, controls and runs of white
    space made one space, cut to `limit` characters; None when nothing is left."""
    if not isinstance(value, str):
        return None
    if isinstance(detail, dict) and detail.get("type") in _MARKUP_TYPES and "<" in value:
        reader = _TextOf()
        reader.feed(value)
        reader.close()
        value = "".join(reader.parts)
    text = _SPACES.sub(" ", _CONTROLS.sub(" ", value)).strip()
    return text[:limit] or None


def _web_url(value: Any, base: str) -> str | None:
    """An absolute http(s) URL (resolved against `base`), or None: never a
    `javascript:` or `data:` URL, which a page would otherwise put in an href."""
    if not isinstance(value, str) or not value.strip() or _CONTROLS.search(value):
        return None
    url = urljoin(base, value.strip())
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > MAX_URL:
        return None
    return url


def _artwork(feed: Any, base: str) -> str | None:
    image = feed.get("image")
    if isinstance(image, dict):
        found = _web_url(image.get("href"), base)
        if found:
            return found
    return _web_url(feed.get("logo"), base)  # Atom


def _guid(value: Any) -> str:
    """The guid as the feed writes it (apps send it back that way), "" if unusable."""
    if not isinstance(value, str) or _CONTROLS.search(value):
        return ""
    return value.strip()[:MAX_GUID]


def _episodes(entries: Any, base: str) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    for entry in entries[:MAX_EPISODES]:
        title = _plain(entry.get("title"), entry.get("title_detail"))
        if title is None:
            continue
        guid = _guid(entry.get("id"))
        urls = dict.fromkeys(
            url
            for enclosure in entry.get("enclosures") or ()
            if (url := _web_url(enclosure.get("href"), base)) is not None
        )
        if urls:
            rows += [(url, guid, title) for url in urls]
        elif guid:
            rows.append(("", guid, title))
    return rows


def parse_feed(body: bytes, url: str, content_type: str = "") -> LearnedFeed:
    """What the feed at `url` (the address it was fetched from, for relative links)
    says of itself and its episodes; NotAFeed when it is no RSS or Atom feed."""
    headers = {"content-type": content_type} if content_type else {}
    parsed = feedparser.parse(io.BytesIO(body), response_headers=headers)
    if not parsed.get("version"):
        raise NotAFeed("the answer is not an RSS or Atom feed")
    feed = parsed.get("feed", {})
    return LearnedFeed(
        title=_plain(feed.get("title"), feed.get("title_detail")),
        link=_web_url(feed.get("link"), url),
        artwork_url=_artwork(feed, url),
        episodes=_episodes(parsed.get("entries", []), url),
    )
