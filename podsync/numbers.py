"""Whole numbers read from outside: query parameters, form fields, headers, the
environment.

Python reads more as a number than a person or a client means. `str.isdigit()` is
true of "²" and "①", which `int()` refuses (a ValueError); `int()` itself reads
"٣", fullwidth digits, " 12 ", "+5" and "1_000", and a string of thousands of digits costs it
time before it refuses. A number that fits Python may still not fit the database:
SQLite's INTEGER and PostgreSQL's bigint hold 64 bits.

So every number podsync reads from outside goes through `parse_int`: ASCII digits
only, a leading "-" where the range allows negatives, nothing else, and within the
range the caller names (by default what a 64-bit column holds). What to do with
anything else (a 400, or the value ignored) is the caller's to say.
"""

from __future__ import annotations

INT64_MAX = 2**63 - 1  # SQLite's INTEGER, PostgreSQL's bigint
INT64_MIN = -(2**63)
_MAX_DIGITS = len(str(INT64_MAX))


def parse_int(text: str, low: int = 0, high: int = INT64_MAX) -> int | None:
    """The integer `text` spells in ASCII digits, with a leading "-" for a negative
    one, when it lies from `low` to `high`; else None. Leading zeros are fine; signs
    other than "-", spaces, underscores and any other digits are not."""
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    if not (digits.isascii() and digits.isdigit()):
        return None
    significant = digits.lstrip("0") or "0"
    if len(significant) > _MAX_DIGITS:
        return None
    value = -int(significant) if negative else int(significant)
    return value if low <= value <= high else None
