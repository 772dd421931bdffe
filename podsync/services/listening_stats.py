"""A person's listening statistics: time listened per week over the last WEEKS
weeks, the podcasts listened to most in that time, and the episodes finished per
month over the last MONTHS months (from the month of the first play counted); weeks
and months in the person's time zone.

Read from running totals kept as plays are written (`podsync.stretches`,
`store.listening_totals`), never by reading the plays themselves: a few rows a week
and podcast, whatever the person's history.

- Time listened is what play actions say was played (`started` to `position`, at
  most MAX_STRETCH a play), each stretch of an episode counted once per person: a
  save or a replay from another device over time already counted adds nothing. A
  week shows at most its own hours.
- An episode counts as finished once, in the month of its first play that reached
  its end.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

from podsync.model import User
from podsync.storage.engine import Engine
from podsync.store import listening_totals
from podsync.store.listening_totals import Span
from podsync.stretches import QUARTER_US

WEEKS = 12
MONTHS = 12
TOP = 10
WEEK_SECONDS = 7 * 86_400
_MONTH_SLOTS = 100  # the slots of months follow those of weeks


@dataclass(frozen=True, slots=True)
class Stats:
    weeks: list[tuple[date, int]]  # each week's Monday, seconds listened; oldest first
    podcasts: list[tuple[str, int]]  # podcast url key, seconds; most first
    months: list[tuple[date, int]]  # each month's first day, episodes finished


def _month_start(day: date, back: int) -> date:
    months = day.year * 12 + day.month - 1 - back
    return date(months // 12, months % 12 + 1, 1)


def _first_week(today: date) -> date:
    monday = today - timedelta(days=today.weekday())
    return monday - timedelta(weeks=WEEKS - 1)


def quarter(day: date, tz: tzinfo) -> int:
    """The quarter of an hour (UTC) the day begins in, in `tz`: exact, since every
    zone's offset is a whole number of quarters."""
    midnight = datetime(day.year, day.month, day.day, tzinfo=tz)
    return int(midnight.timestamp() * 1_000_000) // QUARTER_US


def spans_of(tz: tzinfo, today: date) -> tuple[list[date], list[date], list[Span]]:
    """The weeks' Mondays, the months' first days, and their spans of quarters."""
    first_week = _first_week(today)
    weeks = [first_week + timedelta(weeks=n) for n in range(WEEKS)]
    months = [_month_start(today, MONTHS - 1 - n) for n in range(MONTHS + 1)]
    spans = [
        Span(n, quarter(monday, tz), quarter(monday + timedelta(weeks=1), tz))
        for n, monday in enumerate(weeks)
    ]
    spans += [
        Span(_MONTH_SLOTS + n, quarter(months[n], tz), quarter(months[n + 1], tz))
        for n in range(MONTHS)
    ]
    return weeks, months[:MONTHS], spans


class ListeningStats:
    def __init__(self, db: Engine) -> None:
        self.db = db

    async def stats(self, user: User, tz: tzinfo, now: datetime) -> Stats:
        today = now.astimezone(tz).date()
        weeks, months, spans = spans_of(tz, today)
        # On a worker thread: the weeks' rows of a heavy listener are some thousands.
        async with self.db.read(threaded=True) as conn:
            rows = await listening_totals.listened(conn, user.id, spans[:WEEKS])
            done = await listening_totals.finishes(conn, user.id, spans[WEEKS:])
            first = await listening_totals.first_quarter(conn, user.id)
        by_week = [0] * WEEKS
        finished = [0] * MONTHS
        podcasts: dict[str, int] = {}
        for slot, podcast_key, seconds in rows:
            by_week[slot] += seconds
            podcasts[podcast_key] = podcasts.get(podcast_key, 0) + seconds
        for slot, count in done:
            finished[slot - _MONTH_SLOTS] += count
        by_week = [min(seconds, WEEK_SECONDS) for seconds in by_week]
        window = sum(by_week)
        top = sorted(
            ((key, min(seconds, window)) for key, seconds in podcasts.items() if seconds),
            key=lambda kv: (-kv[1], kv[0]),
        )[:TOP]
        # Months that ended before the first play counted are not shown.
        shown = [
            (first_day, count)
            for first_day, count, span in zip(months, finished, spans[WEEKS:], strict=True)
            if first is not None and span.high > first
        ]
        return Stats(list(zip(weeks, by_week, strict=True)), top, shown)
