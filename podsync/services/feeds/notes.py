"""An episode's show notes and duration as the fetcher keeps them.

Show notes are HTML a feed's author (or anyone who can write into the feed) wrote:
they are sanitized with nh3 (Python's binding of ammonia, which parses HTML the way
browsers do, html5ever, so what it keeps is what a browser would see) to an
allow-list of text markup: paragraphs, line breaks, lists, emphasis, quotes, code,
and links to http(s) and mailto addresses. Everything else goes: script and style
with their content, every image (show notes never make a browser load anything from
another host: an image's address is not kept at all), frames, forms, attributes
other than a link's address (styles, classes, event handlers). Links get
`rel="noopener noreferrer nofollow"`; a relative one is resolved against the feed.

The sanitizing runs when the fetcher stores the notes (what is stored is small and
safe) and again when a page shows them (cheap, and a row written any other way is
made safe all the same). Bounded: the first MAX_SOURCE characters of the source are
read, MAX_NOTES of the result kept, and the source is cut before its MAX_TAGS-th tag or
where its elements would nest deeper than MAX_DEPTH (`bounded`): the HTML parser's
time grows with the square of the nesting (each new block element looks through the
elements open around it), so 50,000 nested `<div>` took 13 s, where real show notes
nest a few levels.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit

import nh3

from podsync.services.feeds.text import LOOKS_LIKE_HTML

MAX_SOURCE = 256 * 1024
MAX_NOTES = 32 * 1024
# Past either, the notes are cut: sanitizing a cut source costs milliseconds.
MAX_TAGS = 5000
MAX_DEPTH = 100
# A tag's start ("<div", "</div"), and the elements that never nest: void ones, and
# the ones the parser closes when the next one opens (a paragraph, a list item).
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
_NEVER_NESTED = frozenset(
    {
        "area", "base", "br", "col", "dd", "dt", "embed", "hr", "img", "input", "li",
        "link", "meta", "option", "p", "param", "source", "tr", "td", "th", "track", "wbr",
    }
)  # fmt: skip
TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "cite", "code", "dd", "del", "div", "dl", "dt",
        "em", "hr", "i", "ins", "li", "ol", "p", "pre", "q", "s", "small", "span", "strong",
        "sub", "sup", "u", "ul",
    }
)  # fmt: skip
# Removed with everything inside them (the default strips a tag and keeps its text).
DROPPED_WITH_CONTENT = frozenset(
    {"script", "style", "template", "iframe", "object", "embed", "noscript", "svg", "math"}
)
ATTRIBUTES = {"a": {"href"}, "ol": {"start"}}
SCHEMES = {"http", "https", "mailto"}
_BLANK = re.compile(r"\s+")
_PARAGRAPH = re.compile(r"\n\s*\n")


def _resolver(base: str) -> Any:
    def attribute(tag: str, name: str, value: str) -> str | None:
        if tag != "a" or name != "href":
            return value
        try:
            url = urljoin(base, value.strip())
            scheme = urlsplit(url).scheme.lower()
        except ValueError:
            return None
        return url if scheme in SCHEMES else None

    return attribute


def bounded(html: str) -> str:
    """The source up to MAX_SOURCE characters, cut before the tag that would be its
    MAX_TAGS-th or open an element MAX_DEPTH deep (counted as a browser would not:
    every opening tag that is not void or self-closing in effect adds a level, every
    closing one takes one off, so the count never says less than the real depth)."""
    html = html[:MAX_SOURCE]
    depth = 0
    for count, tag in enumerate(_TAG.finditer(html)):
        closing, name = tag.groups()
        if closing:
            depth = max(0, depth - 1)
        elif name.lower() not in _NEVER_NESTED:
            depth += 1
        if count >= MAX_TAGS or depth > MAX_DEPTH:
            return html[: tag.start()] + "…"
    return html


def sanitize(html: str, base: str = "") -> str:
    """Show notes made safe to put in a page as they are (see the module)."""
    return nh3.clean(
        bounded(html),
        tags=set(TAGS),
        clean_content_tags=set(DROPPED_WITH_CONTENT),
        attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
        attribute_filter=_resolver(base),
        url_schemes=set(SCHEMES),
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def show_notes(source: Any, base: str) -> str | None:
    """The notes to keep of an item's HTML (or text): sanitized, bounded, None when
    nothing readable is left."""
    if not isinstance(source, str) or not source.strip():
        return None
    if not LOOKS_LIKE_HTML.search(source):  # plain text: its paragraphs and lines
        paragraphs = [p.strip() for p in _PARAGRAPH.split(source[:MAX_SOURCE]) if p.strip()]
        source = "".join(
            "<p>" + "<br>".join(map(_escape, p.splitlines())) + "</p>" for p in paragraphs
        )
    clean = sanitize(source, base)
    if len(clean) > MAX_NOTES:  # cut, and let the parser close what the cut left open
        clean = sanitize(clean[:MAX_NOTES] + "…", base)
    if not _BLANK.sub("", nh3.clean(clean, tags=set())):
        return None  # markup with no text in it (an image alone, say)
    return clean


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_CLOCK = re.compile(r"(?:(\d{1,3}):)?(\d{1,2}):(\d{1,2})(?:\.\d+)?")
MAX_DURATION = 100 * 3600  # longer is a typo (a 2,000-hour episode)


def duration(value: Any) -> int | None:
    """`itunes:duration` in seconds: "1:02:03", "62:03", "3723" (or "3723.5");
    None when there is none or it cannot be read."""
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or len(value) > 20:
        return None
    seconds: int | None = None
    if value.isascii() and value.replace(".", "", 1).isdigit():
        seconds = int(float(value))
    else:
        clock = _CLOCK.fullmatch(value)
        if clock is not None:
            hours, minutes, secs = clock.groups()
            seconds = int(hours or 0) * 3600 + int(minutes) * 60 + int(secs)
    if seconds is None or not 0 < seconds <= MAX_DURATION:
        return None
    return seconds


def media_type(value: Any) -> str | None:
    """An enclosure's declared type ("audio/mpeg"), lower case; None when it is no
    type."""
    if not isinstance(value, str):
        return None
    kind = value.strip().lower()
    return kind if re.fullmatch(r"[a-z0-9.+-]{1,40}/[a-z0-9.+-]{1,60}", kind) else None
