"""The history page's rows grouped the way a person remembers listening: by day (in
their time zone), then by episode, "Listened 42 min, 3 plays". One click leaves one
row: Mark not played writes a play at 0 and a `new` at the same moment, shown as
one "Marked not played". Groups are made within a page of actions (a day that
spans two pages shows on both)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, tzinfo
from typing import Protocol

from podsync.store.listening import HistoryRow


class HistoryItem(Protocol):
    """A row as the page shows it (web/ui/listening.py's HistoryItem)."""

    @property
    def action_label(self) -> str: ...


@dataclass(frozen=True, slots=True)
class EpisodeGroup:
    first: HistoryItem  # its newest action, as a row shows it
    label: str  # the newest action's label ("Marked not played" for that pair)
    plays: int
    summary: str  # "Listened 42 min · 3 plays", "" when nothing was played


@dataclass(frozen=True, slots=True)
class Day:
    label: str  # "Today", "Yesterday", "Tuesday 2026-11-10"
    anchor: str  # "d-2026-11-10"
    groups: list[EpisodeGroup]


def listened_text(seconds: int) -> str:
    minutes = round(seconds / 60)
    if seconds and not minutes:
        return "under a minute"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if hours else f"{minutes} min"


def _day_label(day: date, today: date) -> str:
    gap = (today - day).days
    if gap == 0:
        return "Today"
    if gap == 1:
        return "Yesterday"
    return f"{day:%A} {day.isoformat()}"


def by_day(rows: Sequence[HistoryRow], items: Sequence[HistoryItem], tz: tzinfo) -> list[Day]:
    """Rows newest first (and their items, one each) as days of episode groups."""
    today = datetime.now(tz).date()
    days: dict[date, dict[int, list[tuple[HistoryRow, HistoryItem]]]] = {}
    for row, item in zip(rows, items, strict=True):
        day = datetime.fromtimestamp(row.occurred_at / 1_000_000, tz).date()
        days.setdefault(day, {}).setdefault(row.episode_id, []).append((row, item))
    found = []
    for day, episodes in days.items():
        groups = [_group(pairs) for pairs in episodes.values()]
        found.append(Day(_day_label(day, today), f"d-{day.isoformat()}", groups))
    return found


def _group(pairs: list[tuple[HistoryRow, HistoryItem]]) -> EpisodeGroup:
    newest_row, newest = pairs[0]
    plays = [r for r, _ in pairs if r.action == "play"]
    listened = sum(
        max(0, (r.position or 0) - (r.started or 0))
        for r in plays
        if r.position is not None and r.started is not None
    )
    label = newest.action_label
    marked_unplayed = newest_row.action == "new" and any(
        r.position == 0 and r.occurred_at == newest_row.occurred_at for r in plays
    )
    if marked_unplayed:
        label = "Marked not played"
    counted = len(plays) - (1 if marked_unplayed else 0)
    parts = []
    if listened:
        parts.append(f"Listened {listened_text(listened)}")
    if counted > 1 or (counted == 1 and listened):
        parts.append(f"{counted:,} play{'s' if counted != 1 else ''}")
    return EpisodeGroup(newest, label, counted, " · ".join(parts))
