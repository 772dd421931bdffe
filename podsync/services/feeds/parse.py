"""Reading a fetched feed: title, website, artwork and episode titles.

Well-formed RSS 2.0 and Atom go through `strict` (ElementTree, fast); everything
else through feedparser, the forgiving parser: it reads RSS 0.9x/1.0/2.0 and Atom,
forgives the broken feeds podcasts publish, and decodes by the XML declaration and
the HTTP charset. Three of its habits matter here:
- `parse()` of a string or bytes value treats it as a URL or a file name when it
  looks like one and fetches or opens it; a body is always wrapped in BytesIO, so
  feedparser only ever reads the bytes this server fetched.
- Given the feed's address (Content-Location) it resolves relative URIs, guids
  included (`g1` becomes `https://host/g1`), while apps send the guid as written;
  so it is given no address and links are resolved here.
- It sanitises HTML in every text field (show notes included) and resolves relative
  URIs inside that HTML: two thirds of its time on a typical feed, for fields not
  kept here. Both are off: a title is reduced to its text (markup dropped, never
  shown as HTML), and the few links kept are resolved and checked here.
Everything kept is bounded in length and count and free of control characters.
"""

from __future__ import annotations

import calendar
import io
import re
from typing import Any

import feedparser

from podsync.services.feeds import Deadline, NotAFeed, chapters, notes, text
from podsync.services.feeds.strict import NotStrict, parse_strict
from podsync.store.feed_info import FeedItem, LearnedFeed

_MARKUP_TYPES = ("text/html", "application/xhtml+xml")
_ROOT_TAG = re.compile(rb"<[A-Za-z_]")
_PROLOG_SCAN = 1 << 16
# feedparser reads a document in one call that no deadline can stop, at some tens of
# microseconds a tag: a feed that is not well-formed XML is read by it only when it
# holds at most this many (a second or two; a real feed holds a few thousand).
MAX_FORGIVING_TAGS = 100_000


def prolog_problem(body: bytes) -> str | None:
    """Why the document's start rules it out before parsing, if it does.

    A document type that declares entities: no podcast feed does, and a few nested
    ones expand a hundred bytes to gigabytes (billion laughs), which expat stops, but
    only after feedparser has spent tens of seconds of CPU on the expansion. The
    declarations stand before the root element, so the root must start within the
    first 64 KiB. NUL bytes are dropped first, so UTF-16 and UTF-32 are seen too."""
    head = body[:_PROLOG_SCAN].replace(b"\x00", b"")
    root = _ROOT_TAG.search(head)
    if root is None:
        return "the answer is not an RSS or Atom feed" if head.strip() else "the answer is empty"
    if b"<!ENTITY" in head[: root.start()]:
        return "the feed declares XML entities, which podsync does not read"
    return None


def _plain(value: Any, detail: Any) -> str | None:
    """As `strict` does: markup by the declared type, or escaped HTML found in text
    (feedparser, with sanitising off, calls some of that text/plain)."""
    markup = isinstance(detail, dict) and detail.get("type") in _MARKUP_TYPES
    if not markup and isinstance(value, str):
        markup = text.LOOKS_LIKE_HTML.search(value) is not None
    return text.plain(value, markup)


def _artwork(feed: Any, base: str) -> str | None:
    image = feed.get("image")
    if isinstance(image, dict):
        found = text.web_url(image.get("href"), base)
        if found:
            return found
    return text.web_url(feed.get("logo"), base)  # Atom


def _published(entry: Any) -> int | None:
    """pubDate, Atom's published, else its updated (dc:date too): feedparser reads
    them to UTC."""
    for name in ("published_parsed", "updated_parsed"):
        # The plain dict's get: feedparser's own maps a missing key to the other.
        moment = dict.get(entry, name)
        if moment is not None:
            try:
                return text.within(calendar.timegm(moment) * 1_000_000)
            except (TypeError, ValueError, OverflowError):
                return None
    return None


def _notes(entry: Any) -> Any:
    """content:encoded (Atom's content), else the description (summary)."""
    for content in entry.get("content") or ():
        if isinstance(content, dict) and content.get("value"):
            return content.get("value")
    return entry.get("summary")


def _chapters(entry: Any) -> str | None:
    """Podlove's inline chapters, as feedparser reads them (`psc_chapters`)."""
    found = entry.get("psc_chapters")
    listed = found.get("chapters") if isinstance(found, dict) else None
    if not isinstance(listed, list):
        return None
    pairs = [(c.get("start"), c.get("title")) for c in listed if isinstance(c, dict)]
    return chapters.inline(pairs) if pairs else None


def _episodes(entries: Any, base: str, deadline: Deadline) -> list[FeedItem]:
    rows: list[FeedItem] = []
    for entry in entries[: text.MAX_EPISODES]:
        deadline.check()
        types: dict[str, str | None] = {}
        for enclosure in entry.get("enclosures") or ():
            url = text.web_url(enclosure.get("href"), base)
            if url is not None:
                types.setdefault(url, notes.media_type(enclosure.get("type")))
        title = _plain(entry.get("title"), entry.get("title_detail"))
        guid = text.guid(entry.get("id"))
        # A guid that is a permalink is the page when the item names none; taken
        # only when it is an address by itself (as `strict` does).
        link = text.web_url(guid, "") if entry.get("guidislink") else entry.get("link")
        details = text.Details(
            duration=notes.duration(entry.get("itunes_duration")),
            link=text.web_url(link, base),
            types=types,
            notes=notes.show_notes(_notes(entry), base),
            chapters=_chapters(entry),
        )
        rows += text.episode_rows(title, guid, list(types), _published(entry), details)
    return rows


def parse_feed(
    body: bytes, url: str, content_type: str = "", deadline: Deadline | None = None
) -> LearnedFeed:
    """What the feed at `url` (the address it was fetched from, for relative links)
    says of itself and its episodes; NotAFeed when it is no RSS or Atom feed,
    TooSlowToRead when its items are not read by the `deadline` (by default
    PARSE_DEADLINE_S from now)."""
    deadline = deadline or Deadline()
    problem = prolog_problem(body)
    if problem is not None:
        raise NotAFeed(problem)
    try:
        return parse_strict(body, url, deadline)
    except NotStrict:
        return parse_forgiving(body, url, content_type, deadline)


def parse_forgiving(
    body: bytes, url: str, content_type: str = "", deadline: Deadline | None = None
) -> LearnedFeed:
    """parse_feed with feedparser, for every feed `strict` passes on."""
    if body.count(b"<") > MAX_FORGIVING_TAGS:
        raise NotAFeed(
            f"the feed is not well-formed XML and holds more than {MAX_FORGIVING_TAGS:,} "
            "tags, more than podsync reads of such a feed"
        )
    headers = {"content-type": content_type} if content_type else {}
    parsed = feedparser.parse(
        io.BytesIO(body), response_headers=headers, sanitize_html=False, resolve_relative_uris=False
    )
    if not parsed.get("version"):
        raise NotAFeed("the answer is not an RSS or Atom feed")
    feed = parsed.get("feed", {})
    return LearnedFeed(
        title=_plain(feed.get("title"), feed.get("title_detail")),
        link=text.web_url(feed.get("link"), url),
        artwork_url=_artwork(feed, url),
        episodes=_episodes(parsed.get("entries", []), url, deadline or Deadline()),
        description=text.plain(
            feed.get("subtitle") or feed.get("description"),
            text.LOOKS_LIKE_HTML.search(str(feed.get("subtitle") or "")) is not None,
            text.MAX_DESCRIPTION,
        ),
    )
