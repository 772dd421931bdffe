"""A person's listening statistics: time listened per week over the last WEEKS
weeks, the podcasts listened to most in that time, and the episodes finished per
month over the last MONTHS months; weeks and months in the person's time zone.

- Time listened is what play actions say was played: `position - started` of each
  play that has both (a play at position = total that started there, as Mark
  played writes, is none), at most MAX_STRETCH a play (a clock gone wrong).
- An episode is finished in the month of its first play that reached its end
  (episode_state.finished); an episode finished again later counts once more in
  that later month only if it was finished in no earlier month of the window.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta, tzinfo

from podsync.model import User
from podsync.services.episode_state import finished
from podsync.storage.engine import Engine
from podsync.store import listening

WEEKS = 12
MONTHS = 12
TOP = 10
MAX_STRETCH = 12 * 3600


@dataclass(frozen=True, slots=True)
class Stats:
    weeks: list[tuple[date, int]]  # each week's Monday, seconds listened; oldest first
    podcasts: list[tuple[str, int]]  # podcast url key, seconds; most first
    months: list[tuple[date, int]]  # each month's first day, episodes finished
    plays: int  # play actions read


def _month_start(day: date, back: int) -> date:
    months = day.year * 12 + day.month - 1 - back
    return date(months // 12, months % 12 + 1, 1)


class ListeningStats:
    def __init__(self, db: Engine) -> None:
        self.db = db

    async def stats(self, user: User, tz: tzinfo, now: datetime) -> Stats:
        today = now.astimezone(tz).date()
        since = min(_first_week(today), _month_start(today, MONTHS - 1))
        since_us = int(datetime(since.year, since.month, since.day, tzinfo=tz).timestamp() * 1e6)
        async with self.db.read(threaded=True) as conn:
            rows = await listening.plays_since(conn, user.id, since_us)
            earlier = await listening.played_before(conn, user.id, since_us)
        # Counted on a worker thread too: a year of plays is many thousand rows.
        loop = asyncio.get_running_loop()
        found = await loop.run_in_executor(None, counted, rows, tz, today)
        if earlier or not rows:
            return found
        # No empty months before the person's first play.
        first = datetime.fromtimestamp(rows[0].occurred_at / 1e6, tz).date().replace(day=1)
        return replace(found, months=[(m, n) for m, n in found.months if m >= first])


def _first_week(today: date) -> date:
    monday = today - timedelta(days=today.weekday())
    return monday - timedelta(weeks=WEEKS - 1)


def counted(rows: list[listening.PlayRow], tz: tzinfo, today: date) -> Stats:
    """The statistics of these plays (oldest first) as of `today` in `tz`."""
    first_week = _first_week(today)
    weeks = dict.fromkeys((first_week + timedelta(weeks=n) for n in range(WEEKS)), 0)
    months = dict.fromkeys((_month_start(today, MONTHS - 1 - n) for n in range(MONTHS)), 0)
    podcasts: dict[str, int] = {}
    done: set[int] = set()
    for row in rows:
        day = datetime.fromtimestamp(row.occurred_at / 1e6, tz).date()
        if row.started is not None and row.position is not None and day >= first_week:
            listened = min(max(0, row.position - row.started), MAX_STRETCH)
            week = day - timedelta(days=day.weekday())
            if listened and week in weeks:  # a clock in the future counts nowhere
                weeks[week] += listened
                podcasts[row.podcast_key] = podcasts.get(row.podcast_key, 0) + listened
        if row.episode_id not in done and finished(row.position, row.total):
            done.add(row.episode_id)
            month = day.replace(day=1)
            if month in months:
                months[month] += 1
    top = sorted(podcasts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
    return Stats(list(weeks.items()), top, list(months.items()), len(rows))
