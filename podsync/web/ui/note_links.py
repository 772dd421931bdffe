"""Times in show notes ("12:34", "1:02:03") as links that seek the player.

Done when a page shows the notes, on the notes sanitized (services/feeds/notes.py;
again here, whatever the caller did): the text between tags is searched (never
inside a link the notes already have), each time becomes a link to the episode's
own page at that time (`?t=754`: without script the page's player starts there)
carrying `data-seek` for the script, which seeks the player instead. What comes out
is sanitized once more, with only those links' attributes added to what is allowed,
so the transform cannot open a way for anything the feed wrote.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import nh3

from podsync.services.feeds.notes import (
    ATTRIBUTES,
    DROPPED_WITH_CONTENT,
    MAX_DURATION,
    SCHEMES,
    TAGS,
    sanitize,
)

# A tag as the sanitizer writes it (attributes double-quoted, `"` escaped inside),
# so a `>` inside an attribute's value does not end it.
_TAG = re.compile(r"""(<(?:[^>"']|"[^"]*"|'[^']*')*>)""")
_TIME = re.compile(r"(?<![\w:.])(?:(\d{1,2}):)?([0-5]?\d):([0-5]\d)(?![\w:])")
_OPEN_A = re.compile(r"<a[\s>]", re.IGNORECASE)
_CLOSE_A = re.compile(r"</a\s*>", re.IGNORECASE)
_REF = re.compile(r"[A-Za-z0-9_-]{1,4096}")


def seconds_of(hours: str | None, minutes: str, secs: str) -> int:
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(secs)


def _linked(text: str, ref: str) -> str:
    def link(found: re.Match[str]) -> str:
        at = seconds_of(*found.groups())
        if at > MAX_DURATION:
            return found.group(0)
        return (
            f'<a href="/ui/episodes/{ref}?t={at}" data-seek="{at}" '
            f'data-episode="{ref}">{found.group(0)}</a>'
        )

    return _TIME.sub(link, text)


def _attribute(tag: str, name: str, value: str) -> str | None:
    if tag != "a":
        return value
    if name == "data-seek":
        return value if value.isascii() and value.isdigit() and len(value) <= 7 else None
    if name == "data-episode":
        return value if _REF.fullmatch(value) else None
    if name == "href":
        if value.startswith("/ui/episodes/") and "//" not in value and "\\" not in value:
            return value
        try:
            scheme = urlsplit(value).scheme.lower()
        except ValueError:
            return None
        return value if scheme in SCHEMES else None
    return value


def with_time_links(notes: str, ref: str) -> str:
    """Sanitized notes with their times made links that seek (see the module)."""
    if _REF.fullmatch(ref) is None:
        return notes
    # Sanitized as stored first: what the feed wrote never carries the attributes
    # only these links may have.
    parts = _TAG.split(sanitize(notes))
    inside_link = 0
    for n, part in enumerate(parts):
        if n % 2:  # a tag
            if _OPEN_A.match(part):
                inside_link += 1
            elif _CLOSE_A.match(part):
                inside_link = max(0, inside_link - 1)
        elif not inside_link and part:
            parts[n] = _linked(part, ref)
    attributes = {tag: set(names) for tag, names in ATTRIBUTES.items()}
    attributes["a"] = attributes.get("a", set()) | {"data-seek", "data-episode"}
    return nh3.clean(
        "".join(parts),
        tags=set(TAGS),
        clean_content_tags=set(DROPPED_WITH_CONTENT),
        attributes=attributes,
        attribute_filter=_attribute,
        url_schemes=set(SCHEMES),
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
