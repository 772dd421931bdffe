"""The episode upload's hot helpers, written for speed, answer exactly what their
plain reference forms answer: the content hash (stored hashes must still match a
batch sent again), URL normalising and the client time."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from podsync import timestamps
from podsync.feeds import InvalidFeedUrl, check_feed_url
from podsync.services.gpodder.episodes import (
    _OTHER_SCHEMES,
    FUTURE_SLACK_US,
    content_hash,
    normalise_url,
    parse_client_time,
)
from podsync.store.episodes import EpisodeAction

optional_int = st.none() | st.integers(0, 2**31 - 1)


@settings(max_examples=500, deadline=None)
@given(
    podcast=st.text(min_size=1),
    episode=st.text(min_size=1),
    action=st.sampled_from(["new", "download", "play", "delete", "flattr"]),
    occurred_at=st.integers(timestamps.MIN_US, timestamps.MAX_US),
    device=st.none() | st.text(),
    guid=st.none() | st.text(),
    started=optional_int,
    position=optional_int,
    total=optional_int,
)
def test_the_content_hash_is_the_sha256_of_json_dumps(**f: Any) -> None:
    a = EpisodeAction(0, f["podcast"], "key", f["episode"], f["action"], f["occurred_at"],
                      f["device"], f["guid"], f["started"], f["position"], f["total"])  # fmt: skip
    fields = (a.podcast_url, a.episode_url, a.action, a.occurred_at, a.started, a.position,
              a.total, a.device_id, a.guid)  # fmt: skip
    assert content_hash(a) == hashlib.sha256(json.dumps(fields).encode("utf-8")).digest()


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
