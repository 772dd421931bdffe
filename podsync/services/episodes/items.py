"""An episode action as the apps send it: the JSON object of the gpodder v2 API, which
the Nextcloud API and the servers an import reads from send too. Parsing it gives a
typed `EpisodeAction`, or SkipItem with the reason.

An upload skips what it cannot use instead of failing: AntennaPod and gPodder resend
their whole queue until an upload succeeds, so one poisoned item refused with a 400
would block every later one forever.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from podsync import timestamps
from podsync.feeds import (
    MAX_FEED_URL,
    MAX_GUID,
    InvalidFeedUrl,
    check_feed_url,
    has_bad_characters,
    is_plain_url,
    url_key,
)
from podsync.services.devices import DEVICE_ID, MAX_DEVICE_ID
from podsync.store.episodes import EpisodeAction

ACTIONS = frozenset({"new", "download", "play", "delete", "flattr"})
_OTHER_SCHEMES = re.compile(r"^(feed|itpc|pcast)://", re.IGNORECASE)
INT32_MAX = 2**31 - 1
FUTURE_SLACK_US = 86_400_000_000  # one day
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A time without a zone is UTC: subtracting the naive epoch gives the same count as
# attaching UTC and subtracting the aware one, at a quarter of the cost.
_NAIVE_EPOCH = datetime(1970, 1, 1)
_ONE_MICRO = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - _EPOCH


def normalise_url(raw: str) -> str | None:
    """A feed or episode URL as stored: trimmed, feed:// itpc:// pcast:// read as
    http://. None when it is still not an absolute http(s) URL (mygpo's rules)."""
    if is_plain_url(raw):  # nearly every URL: nothing to trim, rewrite or check further
        return raw
    url = _OTHER_SCHEMES.sub("http://", raw.strip(), count=1)
    try:
        return check_feed_url(url)
    except InvalidFeedUrl:
        return None


def parse_client_time(value: Any, received_at: int) -> int:
    """An action's client moment in microseconds: ISO 8601 (no zone means UTC; `Z`,
    offsets and fractions accepted) or epoch seconds; anything else is receipt time."""
    try:
        if isinstance(value, str):
            moment = datetime.fromisoformat(value.strip())
            epoch = _NAIVE_EPOCH if moment.tzinfo is None else _EPOCH
            micros = (moment - epoch) // _ONE_MICRO
        elif isinstance(value, int | float) and not isinstance(value, bool):
            micros = int(value * 1_000_000)
        else:
            return received_at
    except (ValueError, OverflowError):
        return received_at
    # More than a day ahead of the server: a wrong clock, and a time that would win
    # every aggregated view forever (contract 14); the time of receipt instead.
    if not timestamps.MIN_US <= micros <= received_at + FUTURE_SLACK_US:
        return received_at
    return micros


class SkipItem(ValueError):
    """An uploaded item that cannot be stored; the reason is logged, not answered."""


# AntennaPod sends -1 for a number it does not know (a play whose position or length
# it lost): stored as no number, as the release before did, and served without it.
UNKNOWN = -1


def _play_field(item: dict[str, Any], name: str) -> int | None:
    """A play's `position`, `started` or `total` in whole seconds (a fraction rounded
    down); None when absent or AntennaPod's -1; SkipItem for anything else that is not
    a number from 0 to 2^31 - 1: a string, a boolean, NaN, an infinity, another
    negative. A play stored without its number would hide the real position."""
    value = item.get(name)
    if type(value) is int and 0 <= value <= INT32_MAX:  # nearly every one
        return value
    if value is None:
        return None  # gPodder uploads a bare play
    kind = type(value)
    if kind is not int and kind is not float:  # bool is int's subclass, not int
        raise SkipItem(f"{name} is not a number")
    if value == UNKNOWN:
        return None
    if kind is float and not math.isfinite(value):
        raise SkipItem(f"{name} is not a finite number")
    if value < 0:
        raise SkipItem(f"{name} {value} is negative")
    if value >= INT32_MAX + 1:  # 2^31 - 0.5 is 2^31 - 1 rounded down
        raise SkipItem(f"{name} {value} is out of range")
    return int(value)  # a fraction rounded down (int() of a non-negative float)


def _optional_text(item: dict[str, Any], name: str, limit: int) -> str | None:
    value = item.get(name)
    if not isinstance(value, str) or not value or len(value) > limit:
        return None
    return None if has_bad_characters(value) else value


def _device(item: dict[str, Any]) -> str | None:
    """The action's device id when it is a valid one; an action with any other is kept
    without a device."""
    value = item.get("device")
    # DEVICE_ID admits 1 to 64 characters of [A-Za-z0-9_.-]: _optional_text's checks.
    if not isinstance(value, str) or len(value) > MAX_DEVICE_ID:  # not kept in the cache
        return None
    return value if _is_device_id(value) else None


@lru_cache(maxsize=256)
def _is_device_id(value: str) -> bool:
    """An upload names a few devices a thousand times: each is checked once."""
    return DEVICE_ID.fullmatch(value) is not None


@lru_cache(maxsize=1024)
def _podcast(raw: str) -> tuple[str, str] | None:
    """(the podcast URL as stored, its url key), or None when it is not an http(s)
    URL. An app's uploads name the same podcasts again and again: each is worked out
    once."""
    url = normalise_url(raw)
    return None if url is None else (url, url_key(url))


def _item_url(item: dict[str, Any], field: str, rewrites: dict[str, str]) -> str:
    raw = item.get(field)
    if not isinstance(raw, str):
        raise SkipItem(f"{field} is missing or not a string")
    url = normalise_url(raw)
    if url != raw and not has_bad_characters(raw):
        rewrites[raw] = url or ""
    if url is None:
        raise SkipItem(f"{field} is not an http(s) URL")
    return url


def parse_item(item: Any, received_at: int, rewrites: dict[str, str]) -> EpisodeAction:
    """One uploaded action, or SkipItem. URL rewrites (and `""` for a URL that could
    not be used) are added to `rewrites`, the response's update_urls."""
    if not isinstance(item, dict):
        raise SkipItem("not an object")
    raw = item.get("podcast")
    # Only what could be a URL is kept in the cache: a long string is refused anyway.
    known = _podcast(raw) if type(raw) is str and len(raw) <= MAX_FEED_URL else None
    if known is None or known[0] != raw:  # rewritten, refused or not a string
        podcast = _item_url(item, "podcast", rewrites)
        podcast_key = url_key(podcast)
    else:
        podcast, podcast_key = known
    episode = item.get("episode")
    if type(episode) is not str or not is_plain_url(episode):  # else stored as sent
        episode = _item_url(item, "episode", rewrites)
    action = item.get("action")
    if not isinstance(action, str) or (action := action.lower()) not in ACTIONS:
        raise SkipItem("unknown action")
    started = position = total = None
    if action == "play":
        position = _play_field(item, "position")
        started = _play_field(item, "started")
        total = _play_field(item, "total")
        if position is None:
            # started and total mean nothing without a position (AntennaPod needs all
            # three); checked all the same, so a bad one skips the item either way
            started = total = None
    # Positional, in EpisodeAction's field order (keywords cost a third more here).
    return EpisodeAction(
        0,  # seq
        podcast,
        podcast_key,
        episode,
        action,
        parse_client_time(item.get("timestamp"), received_at),
        _device(item),
        _optional_text(item, "guid", MAX_GUID),
        started,
        position,
        total,
    )
