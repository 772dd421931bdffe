"""Contract section 2: RFC 3339 in, UTC `Z` with at most microseconds out."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from podsync import timestamps
from podsync.timestamps import MAX_US, MIN_US, InvalidTimestamp

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BASE = timestamps.parse("2026-07-11T13:30:00Z")


@pytest.mark.parametrize(
    ("text", "offset_us"),
    [
        ("2026-07-11T13:30:00Z", 0),
        ("2026-07-11t13:30:00z", 0),
        ("2026-07-11T13:30:00.1Z", 100_000),
        ("2026-07-11T13:30:00.123456Z", 123_456),
        ("2026-07-11T13:30:00.1234569Z", 123_456),  # truncated, not rounded
        ("2026-07-11T13:30:00.999999999Z", 999_999),
        ("2026-07-11T15:30:00.123456+02:00", 123_456),
        ("2026-07-11T11:00:00-02:30", 0),
        ("2026-07-11T13:30:00+00:00", 0),
        ("2026-07-11T13:30:00-00:00", 0),
        ("2026-07-12T00:29:00+10:59", 0),
    ],
)
def test_accepted_forms(text: str, offset_us: int) -> None:
    assert timestamps.parse(text) == BASE + offset_us


def test_parse_matches_the_standard_library() -> None:
    value = timestamps.parse("2026-07-11T15:30:00.123456+02:00")
    expected = datetime(2026, 7, 11, 13, 30, 0, 123456, tzinfo=UTC)
    assert value == round(expected.timestamp() * 1_000_000)


@pytest.mark.parametrize(
    "text",
    [
        "2026-07-11T13:30:00",  # no offset
        "2026-07-11 13:30:00Z",
        "2026-07-11T13:30Z",
        "2026-07-11T13:30:60Z",  # leap second
        "2026-07-11T24:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-07-11T13:30:00.Z",
        "2026-07-11T13:30:00+0200",
        "2026-07-11T13:30:00+02",
        "2026-07-11T13:30:00+24:00",
        "2026-07-11T13:30:00+02:60",
        "2026-07-11T13:30:00ZZ",
        " 2026-07-11T13:30:00Z",
        "2026-07-11T13:30:00Z\n",
        "26-07-11T13:30:00Z",
        "\uff12026-07-11T13:30:00Z",  # a fullwidth digit
        "2026-07-11T13:30:00\u00b2Z",
        "0000-12-31T23:59:59Z",
        "0001-01-01T00:00:00+00:01",  # year 0 once converted to UTC
        "9999-12-31T23:59:59-00:01",  # year 10000 once converted to UTC
        "",
        "yesterday",
        "1752233400",
    ],
)
def test_rejected_forms(text: str) -> None:
    with pytest.raises(InvalidTimestamp):
        timestamps.parse(text)


def test_range_is_years_1_to_9999() -> None:
    assert timestamps.parse("0001-01-01T00:00:00Z") == MIN_US
    assert timestamps.parse("9999-12-31T23:59:59.999999Z") == MAX_US
    assert timestamps.parse("0001-01-01T00:59:00+00:59") == MIN_US


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (BASE, "2026-07-11T13:30:00Z"),
        (BASE + 123_456, "2026-07-11T13:30:00.123456Z"),
        (BASE + 100_000, "2026-07-11T13:30:00.1Z"),
        (BASE + 1, "2026-07-11T13:30:00.000001Z"),
        (0, "1970-01-01T00:00:00Z"),
        (-1, "1969-12-31T23:59:59.999999Z"),
        (MIN_US, "0001-01-01T00:00:00Z"),
        (MAX_US, "9999-12-31T23:59:59.999999Z"),
        (timestamps.parse("0999-05-06T07:08:09Z"), "0999-05-06T07:08:09Z"),
    ],
)
def test_output_is_utc_z_with_at_most_microseconds(value: int, text: str) -> None:
    assert timestamps.format(value) == text
    assert timestamps.parse(text) == value


def test_output_round_trips() -> None:
    for value in (BASE + 10, BASE + 120_000, MIN_US + 7, MAX_US - 3, -62_000_000_000_000_001):
        assert timestamps.parse(timestamps.format(value)) == value


def test_now_is_the_wall_clock_in_microseconds() -> None:
    before = datetime.now(UTC).timestamp()
    now = timestamps.now_us()
    after = datetime.now(UTC).timestamp()
    assert before * 1e6 - 1 <= now <= after * 1e6 + 1


def test_parse_agrees_with_datetime_across_the_range() -> None:
    """The integer arithmetic against the standard library's, for dates across the
    years 1-9999 (leap days, both signs of offset, fractions of every length)."""
    rng = random.Random(20261124)
    for _ in range(3000):
        moment = datetime.min.replace(tzinfo=UTC) + timedelta(
            seconds=rng.randrange(1, 315_537_897_598), microseconds=rng.randrange(1_000_000)
        )
        sign, minutes = rng.choice("+-"), rng.randrange(24 * 60)
        offset = timedelta(minutes=minutes) * (1 if sign == "+" else -1)
        local = moment + offset
        digits = rng.randrange(0, 10)
        fraction = (
            f".{local.microsecond:06d}{'7' * max(digits - 6, 0)}"[: digits + 1] if digits else ""
        )
        text = (
            f"{local.year:04d}-{local:%m-%dT%H:%M:%S}{fraction}"
            f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
        )
        kept = int((fraction[1:7] or "0").ljust(6, "0"))
        expected = (moment.replace(microsecond=0) - EPOCH) // timedelta(microseconds=1) + kept
        assert timestamps.parse(text) == expected, text
