"""The episode upload's hot helpers, written for speed, answer exactly what their
plain reference forms answer (URL normalising, the client time, a whole item with its
shortcuts and caches), and an episode's URL is stored and read back whole."""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from podsync import timestamps
from podsync.episode_keys import full_url, stored_url, url_hash, url_prefix
from podsync.feeds import InvalidFeedUrl, check_feed_url, has_bad_characters, url_key
from podsync.services.devices import DEVICE_ID
from podsync.services.episodes.items import (
    _OTHER_SCHEMES,
    FUTURE_SLACK_US,
    SkipItem,
    _podcast,
    normalise_url,
    parse_client_time,
    parse_item,
)


@settings(max_examples=500, deadline=None)
@given(url=st.text(st.characters(exclude_categories=["Cs"])), first=st.text())
def test_an_episode_url_is_stored_and_read_back_whole(url: str, first: str) -> None:
    """Kept without its podcast's prefix (the first episode's scheme, host and path up
    to its last `/`), whatever either URL is; the key to find it is the first four
    bytes of its MD5, signed (what PostgreSQL's schema step computes in SQL)."""
    prefix = url_prefix(first)
    assert first.startswith(prefix) and (prefix == "" or prefix.endswith("/"))
    assert "?" not in prefix and "#" not in prefix
    text, prefixed = stored_url(url, prefix)
    assert full_url(text, prefixed, prefix) == url
    assert prefixed == (prefix != "" and url.startswith(prefix))
    digest = hashlib.md5(url.encode("utf-8"), usedforsecurity=False).digest()
    assert url_hash(url) == int.from_bytes(digest[:4], "big", signed=True)


def test_the_prefix_of_an_episode_url() -> None:
    assert url_prefix("https://cdn.example/show/ep1.mp3?x=/y#z/") == "https://cdn.example/show/"
    assert url_prefix("https://cdn.example") == "https://"
    assert url_prefix("x") == ""


def _reference_url(raw: str) -> str | None:
    url = _OTHER_SCHEMES.sub("http://", raw.strip(), count=1)
    try:
        return check_feed_url(url)
    except InvalidFeedUrl:
        return None


URL_PIECES = st.sampled_from(
    ["http://", "https://", "HTTP://", "feed://", "itpc://", "pcast://", "ftp://", " ", "\t",
     "\n", "\u00a0", "\u2003", "a", "example.com", ":80", ":99999", "/", "?x=1", "#f", "\x00",
     "\u200b", "\u00e9"]
)  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(URL_PIECES, max_size=8).map("".join))
@example(" http://example.com/feed.xml ")
@example("feed://example.com/feed.xml")
@example("http://" + "a" * 2100)
def test_normalise_url_answers_what_its_checks_answer(raw: str) -> None:
    assert normalise_url(raw) == _reference_url(raw)


def _reference_time(value: str) -> int | None:
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // (
        datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    )


@settings(max_examples=1000, deadline=None)
@given(
    st.datetimes(
        timezones=st.none() | st.just(UTC) | st.timezones(),  # type: ignore[arg-type]
        allow_imaginary=True,
    ).map(datetime.isoformat)
)
@example("0001-01-01T00:00:00")
@example("9999-12-31T23:59:59.999999")
@example("0001-01-01T00:00:00+01:00")
def test_client_time_is_the_utc_reading_of_the_text(text: str) -> None:
    received = timestamps.now_us()
    expected = _reference_time(text)
    got = parse_client_time(text, received)
    if expected is None or not timestamps.MIN_US <= expected <= received + FUTURE_SLACK_US:
        assert got == received
    else:
        assert got == expected


def _reference_number(value: Any) -> int | str | None:
    """A play's number as the upload takes it, or "skip"."""
    if value is None or (type(value) in (int, float) and value == -1):
        return None
    if type(value) not in (int, float) or not math.isfinite(value):
        return "skip"
    return int(value) if 0 <= value < 2**31 else "skip"


def _reference_item(item: dict[str, Any], now: int) -> tuple[Any, ...] | None:
    """What parse_item gives, from the plain helpers: the action's fields and the
    rewrites, or None for an item skipped."""
    rewrites: dict[str, str] = {}
    urls = []
    for field in ("podcast", "episode"):
        raw = item.get(field)
        if not isinstance(raw, str):
            return None
        url = _reference_url(raw)
        if url != raw and not has_bad_characters(raw):
            rewrites[raw] = url or ""
        if url is None:
            return None
        urls.append(url)
    numbers = [_reference_number(item.get(name)) for name in ("position", "started", "total")]
    if "skip" in numbers:
        return None
    position, started, total = numbers
    if position is None:
        started = total = None
    device = item.get("device")
    guid = item.get("guid")
    return (
        urls[0],
        url_key(urls[0]),
        urls[1],
        parse_client_time(item.get("timestamp"), now),
        device if isinstance(device, str) and DEVICE_ID.fullmatch(device) else None,
        guid if isinstance(guid, str) and guid and not has_bad_characters(guid) else None,
        started,
        position,
        total,
        rewrites,
    )


NUMBERS = st.none() | st.integers(-2, 2**31 + 1) | st.floats(allow_nan=True) | st.booleans()
NUMBERS |= st.sampled_from([-1, -1.0, 2**31 - 1, 2**31 - 0.5, 2**31, 0.5, "60"])


@settings(max_examples=1500, deadline=None)
@given(
    podcast=st.sampled_from(["https://example.com/feed.xml", " https://example.com/feed.xml"])
    | st.lists(URL_PIECES, max_size=6).map("".join),
    episode=st.lists(URL_PIECES, max_size=6).map("".join) | st.integers(),
    device=st.sampled_from(["phone", "phone 2", "", "a" * 64, "a" * 65, "ph\x00"])
    | st.text(max_size=70),
    position=NUMBERS,
    started=NUMBERS,
    total=NUMBERS,
)
@example("http://" + "a" * 2100, "https://x.example/1.mp3", "phone", 1, 0, 2)
def test_an_item_parses_to_what_the_plain_checks_give(
    podcast: str, episode: Any, device: str, position: Any, started: Any, total: Any
) -> None:
    """Twice in a row (the podcast and device caches cold, then warm), the same as the
    helpers without shortcuts; a string that cannot be a URL is not cached."""
    item = {"podcast": podcast, "episode": episode, "action": "play", "device": device,
            "timestamp": "2026-03-01T08:00:00", "guid": "g-1", "position": position,
            "started": started, "total": total}  # fmt: skip
    now = timestamps.now_us()
    expected = _reference_item(item, now)
    calls = _podcast.cache_info()
    for _ in range(2):
        rewrites: dict[str, str] = {}
        try:
            a = parse_item(item, now, rewrites)
        except SkipItem:
            assert expected is None
            continue
        got = (a.podcast_url, a.podcast_key, a.episode_url, a.occurred_at, a.device_id,
               a.guid, a.started, a.position, a.total, rewrites)  # fmt: skip
        assert got == expected
    if len(podcast) > 2048:
        after = _podcast.cache_info()
        assert (after.hits, after.misses) == (calls.hits, calls.misses)
