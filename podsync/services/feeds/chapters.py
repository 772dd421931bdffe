"""Chapters of an episode, as its feed gives them: Podlove Simple Chapters
(`psc:chapters`, inline in the item) or Podcasting 2.0 `podcast:chapters` (the
address of a JSON document).

The fetcher keeps, per item, one short JSON text (`FeedItem.chapters`): either
`{"list": [[start, title], ...]}` (inline chapters, read here) or `{"url": ...}`
(the JSON's address; the web UI fetches it when an episode's chapters are asked
for, through the fetcher's client: the same address rules as every fetch, its own
size cap). Bounded: MAX_CHAPTERS chapters, titles of MAX_TITLE characters.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from podsync.services.feeds.notes import MAX_DURATION

MAX_CHAPTERS = 500
MAX_TITLE = 200
MAX_JSON_BYTES = 256 * 1024
# Fetched chapters are kept in memory this long, for this many addresses.
KEEP_S = 3600.0
KEEP_MAX = 256
ACCEPT = "application/json+chapters, application/json;q=0.9, */*;q=0.1"
_NPT = re.compile(r"(?:(?:(\d{1,3}):)?(\d{1,2}):)?(\d{1,6})(?:\.\d+)?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


@dataclass(frozen=True, slots=True)
class Chapter:
    start: int  # seconds
    title: str


def _title(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = _CONTROL.sub(" ", value).strip()[:MAX_TITLE]
    return text or None


def start_of(value: Any) -> int | None:
    """A chapter's start: Podlove's normal play time ("01:02:03.5", "62:03", "45") or
    a number of seconds (Podcasting 2.0); None when it cannot be read."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = int(value) if value == value and abs(value) < 1e9 else -1
    elif isinstance(value, str):
        found = _NPT.fullmatch(value.strip())
        if found is None:
            return None
        hours, minutes, secs = found.groups()
        seconds = int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(secs)
    else:
        return None
    return seconds if 0 <= seconds <= MAX_DURATION else None


def checked(pairs: list[tuple[Any, Any]]) -> list[Chapter]:
    """Chapters from (start, title) pairs as a feed gives them: the readable ones, in
    order of their start, bounded."""
    found = []
    for start, title in pairs[: MAX_CHAPTERS * 2]:
        at, name = start_of(start), _title(title)
        if at is not None and name is not None:
            found.append(Chapter(at, name))
    found.sort(key=lambda c: c.start)
    return found[:MAX_CHAPTERS]


def inline(pairs: list[tuple[Any, Any]]) -> str | None:
    """What the fetcher keeps of an item's `psc:chapters`."""
    found = checked(pairs)
    if not found:
        return None
    return json.dumps({"list": [[c.start, c.title] for c in found]}, ensure_ascii=False)


def linked(url: str | None) -> str | None:
    """What the fetcher keeps of an item's `podcast:chapters` (its checked address)."""
    return json.dumps({"url": url}) if url else None


@dataclass(frozen=True, slots=True)
class Kept:
    """An item's chapters as kept: a list, or where to fetch them."""

    chapters: list[Chapter]
    url: str | None


def kept(text: str | None) -> Kept | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("url"), str):
        return Kept([], value["url"])
    listed = value.get("list")
    if isinstance(listed, list):
        pairs = [tuple(p) for p in listed if isinstance(p, list) and len(p) == 2]
        return Kept(checked(pairs), None)
    return None


def from_json(body: bytes) -> list[Chapter]:
    """The chapters of a Podcasting 2.0 JSON chapters document (`chapters`, each with
    `startTime` and `title`; chapters marked `toc: false` are not listed)."""
    try:
        value = json.loads(body[:MAX_JSON_BYTES])
    except ValueError:
        return []
    items = value.get("chapters") if isinstance(value, dict) else None
    if not isinstance(items, list):
        return []
    pairs = [
        (item.get("startTime"), item.get("title"))
        for item in items
        if isinstance(item, dict) and item.get("toc") is not False
    ]
    return checked(pairs)


class ChapterCache:
    """Fetched chapters by address, for KEEP_S seconds, at most KEEP_MAX addresses."""

    def __init__(self) -> None:
        self._found: dict[str, tuple[float, list[Chapter]]] = {}

    def get(self, url: str) -> list[Chapter] | None:
        kept = self._found.get(url)
        if kept is None or kept[0] < time.monotonic():
            return None
        return kept[1]

    def put(self, url: str, found: list[Chapter]) -> None:
        if len(self._found) >= KEEP_MAX:
            self._found.pop(next(iter(self._found)))  # the oldest
        self._found[url] = (time.monotonic() + KEEP_S, found)
