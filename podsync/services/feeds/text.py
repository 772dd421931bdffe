"""What is kept of a feed's strings: one line of plain text, bounded; web URLs only;
guids as written."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

from podsync.store.feed_info import FeedItem

MAX_TITLE = 500
MAX_URL = 2048
MAX_DESCRIPTION = 2000  # a feed's description, plain text, as a podcast's page shows it
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


@dataclass(frozen=True, slots=True)
class Details:
    """What is kept of an item beside its title: how long, its web page, its
    enclosures' declared types (by URL), its show notes (sanitized)."""

    duration: int | None = None
    link: str | None = None
    types: dict[str, str | None] | None = None
    notes: str | None = None
    chapters: str | None = None  # services/feeds/chapters.py


NO_DETAILS = Details()


def episode_rows(
    title: str | None,
    guid: str,
    urls: list[str],
    published_at: int | None = None,
    details: Details = NO_DETAILS,
) -> list[FeedItem]:
    """The rows of one item: one per distinct enclosure URL, or one without a URL
    when it has a guid; none without a title."""
    if title is None:
        return []
    d, types = details, details.types or {}
    if urls:
        return [
            FeedItem(
                url,
                guid,
                title,
                published_at,
                d.duration,
                d.link,
                types.get(url),
                d.notes,
                d.chapters,
            )
            for url in dict.fromkeys(urls)
        ]
    if not guid:
        return []
    return [FeedItem("", guid, title, published_at, d.duration, d.link, None, d.notes, d.chapters)]


# Dates kept: 1900 to 8999 (a year 1 or 99999 is a typo, and pages show the rest).
EARLIEST_US = -2_208_988_800_000_000
LATEST_US = 221_845_392_000_000_000


def within(us: int) -> int | None:
    return us if EARLIEST_US <= us < LATEST_US else None


def _microseconds(moment: datetime) -> int | None:
    if moment.tzinfo is None:  # no zone given: UTC, as feedparser reads it
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return within((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds)


def published(value: Any) -> int | None:
    """An item's date (RFC 822 as RSS writes it, or RFC 3339 as Atom does) in
    microseconds since the epoch; None when there is none or it cannot be read."""
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        return None
    value = value.strip()
    try:
        return _microseconds(parsedate_to_datetime(value))
    except (TypeError, ValueError, IndexError, OverflowError):
        pass
    try:
        return _microseconds(datetime.fromisoformat(value))
    except (ValueError, OverflowError):
        return None
