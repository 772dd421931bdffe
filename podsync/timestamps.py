"""RFC 3339 timestamps (contract section 2), kept internally as integer microseconds.

Integers compare exactly, which last-write-wins depends on, and fit every year
from 1 to 9999.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_US = 1_000_000
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))",
    re.ASCII,
)
MIN_US = -62135596800 * _US  # 0001-01-01T00:00:00Z
MAX_US = 253402300799 * _US + 999999  # 9999-12-31T23:59:59.999999Z


class InvalidTimestamp(ValueError):
    """The text is not an RFC 3339 timestamp podsync accepts."""


def parse(text: str) -> int:
    """RFC 3339 text -> microseconds since the Unix epoch (UTC).

    Requires an offset; truncates fractions beyond microseconds; refuses leap
    seconds and instants outside the years 1-9999 once converted to UTC.
    """
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise InvalidTimestamp(f"{text!r} is not an RFC 3339 timestamp with an offset")
    year, month, day, hour, minute, second, fraction, _zulu, sign, off_h, off_m = match.groups()
    # Whole seconds from the date's ordinal and the clock fields, in integers: less
    # than half the cost of a datetime's subtraction and a timedelta's division (a
    # sync batch parses one of these per action).
    try:
        days = date(int(year), int(month), int(day)).toordinal() - _EPOCH_ORDINAL
    except ValueError as exc:
        raise InvalidTimestamp(f"{text!r} is not a valid date and time: {exc}") from None
    h, m, s = int(hour), int(minute), int(second)
    if h > 23 or m > 59 or s > 59:  # 60 would be a leap second, refused as before
        raise InvalidTimestamp(f"{text!r} is not a valid date and time")
    seconds = days * 86400 + h * 3600 + m * 60 + s
    if sign is not None:
        oh, om = int(off_h), int(off_m)
        if oh > 23 or om > 59:
            raise InvalidTimestamp(f"{text!r} has an invalid UTC offset")
        offset = oh * 3600 + om * 60
        seconds = seconds - offset if sign == "+" else seconds + offset
    value = seconds * _US + (int(fraction[:6].ljust(6, "0")) if fraction else 0)
    if not MIN_US <= value <= MAX_US:
        raise InvalidTimestamp(f"{text!r} is outside the years 1-9999 in UTC")
    return value


# The last value each formatter was given and its text: the entities and actions of
# one batch mostly share a time (a batch of new feeds: the server's now), and a
# lookup costs a tenth of the datetime arithmetic. One tuple, replaced whole, so a
# thread formatting at the same time reads a consistent pair.
_last_format: tuple[int, str] = (0, "1970-01-01T00:00:00Z")
_last_seconds: tuple[int, str] = (0, "1970-01-01T00:00:00")


def format(value: int) -> str:
    """Microseconds since the epoch -> `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`."""
    global _last_format
    last, text = _last_format
    if value == last:
        return text
    # isoformat() of a naive datetime is C code that always pads the year to four
    # digits; strftime took three times as long, and a list page formats 50 of these.
    text = (_NAIVE_EPOCH + timedelta(microseconds=value)).isoformat()
    if "." in text:  # trim the fraction's trailing zeros (it still round-trips)
        text = text.rstrip("0")
    text += "Z"
    _last_format = (value, text)
    return text


def format_seconds(value: int) -> str:
    """Microseconds since the epoch -> `YYYY-MM-DDTHH:MM:SS`, the whole second it is in
    (UTC, no zone, no fraction)."""
    global _last_seconds
    seconds = value // _US
    last, text = _last_seconds
    if seconds == last:
        return text
    text = (_NAIVE_EPOCH + timedelta(seconds=seconds)).isoformat()
    _last_seconds = (seconds, text)
    return text


def now_us() -> int:
    return time.time_ns() // 1000
