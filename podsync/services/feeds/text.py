"""What is kept of a feed's strings: one line of plain text, bounded; web URLs only;
guids as written."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

MAX_TITLE = 500
MAX_URL = 2048
MAX_GUID = 512
MAX_EPISODES = 5000  # a feed's items kept for the history page (newest first in most feeds)
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]+")
_SPACES = re.compile(r"\s+")
# Text that holds a tag or an entity reference, as escaped HTML in an RSS field does.
LOOKS_LIKE_HTML = re.compile(r"<[A-Za-z/!]|&(?:#\d+|#x[0-9A-Fa-f]+|[A-Za-z]+);")


class _TextOf(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def plain(value: Any, markup: bool = False, limit: int = MAX_TITLE) -> str | None:
    """One line of text: markup (when `markup`) reduced to its text, controls and runs
    of white space made one space, cut to `limit` characters; None when nothing is
    left."""
    if not isinstance(value, str):
        return None
    if markup and ("<" in value or "&" in value):
        reader = _TextOf()
        reader.feed(value)
        reader.close()
        value = "".join(reader.parts)
    text = _SPACES.sub(" ", _CONTROLS.sub(" ", value)).strip()
    return text[:limit] or None


def web_url(value: Any, base: str) -> str | None:
    """An absolute http(s) URL (resolved against `base`), or None: never a
    `javascript:` or `data:` URL, which a page would otherwise put in an href."""
    if not isinstance(value, str) or not value.strip() or _CONTROLS.search(value):
        return None
    try:
        url = urljoin(base, value.strip())
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > MAX_URL:
        return None
    return url


def guid(value: Any) -> str:
    """The guid as the feed writes it (apps send it back that way), "" if unusable."""
    if not isinstance(value, str) or _CONTROLS.search(value):
        return ""
    return value.strip()[:MAX_GUID]


def episode_rows(title: str | None, guid: str, urls: list[str]) -> list[tuple[str, str, str]]:
    """The (episode_url, guid, title) rows of one item: one per distinct enclosure
    URL, or one without a URL when it has a guid; none without a title."""
    if title is None:
        return []
    if urls:
        return [(url, guid, title) for url in dict.fromkeys(urls)]
    return [("", guid, title)] if guid else []
