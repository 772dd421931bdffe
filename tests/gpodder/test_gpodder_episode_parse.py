"""The episode upload's hot helpers, written for speed, answer exactly what their
plain reference forms answer (URL normalising and the client time), and an episode's
URL is stored and read back whole."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from hypothesis import example, given, settings
from hypothesis import strategies as st

from podsync import timestamps
from podsync.episode_keys import full_url, stored_url, url_hash, url_prefix
from podsync.feeds import InvalidFeedUrl, check_feed_url
from podsync.services.episodes.items import (
    _OTHER_SCHEMES,
    FUTURE_SLACK_US,
    normalise_url,
    parse_client_time,
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
