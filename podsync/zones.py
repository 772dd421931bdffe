"""Time zones by their IANA names (`Europe/Berlin`), as the configuration and a
person's Account page give them. zoneinfo is imported on first use: a server that
shows no page never loads it."""

from __future__ import annotations

from datetime import UTC, tzinfo
from functools import cache, lru_cache

MAX_NAME = 64


@lru_cache(maxsize=256)  # bounded: a form posts whatever names it likes
def zone(name: str) -> tzinfo | None:
    """The zone of this name, or None when there is none such."""
    if name in ("UTC", "Etc/UTC"):
        return UTC
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def known_zone(name: str) -> bool:
    return len(name) <= MAX_NAME and zone(name) is not None


@cache
def zone_names() -> tuple[str, ...]:
    """Every zone name this system knows, sorted (for a list to pick from)."""
    import zoneinfo

    return tuple(sorted(zoneinfo.available_timezones() | {"UTC"}))


def spelled_as_known(name: str) -> str | None:
    """`name` as the zone database spells it ("europe/berlin" is Europe/Berlin),
    or None when no zone has that name in any letter case."""
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        return None
    if known_zone(name):
        return name
    folded = name.casefold()
    return next((known for known in zone_names() if known.casefold() == folded), None)
