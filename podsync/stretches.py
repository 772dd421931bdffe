"""What a person has listened to of an episode, as merged stretches of seconds, and
the running totals the statistics read: each stretch of an episode counts once per
person, however often a player saves it or another device plays it again.

A play action says it played from `started` to `position`. Its new coverage is the
part of that stretch no earlier play of the same person and episode covered; only
that is added to the totals, in the quarter of an hour (UTC) the play happened: a
quarter is exact for every time zone's day, week and month, whose offsets are all
whole quarters. The stretches kept per person and episode are bounded (MAX_SPANS):
past it the two closest merge, so a later play inside the gap between them adds
nothing (a count too low by at most that gap, never one too high).

Pure: no database, no clock; the write path (`services/episodes/writes.py`) and the
schema step that fills the totals from the plays stored before both use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# A play that reaches within FINISHED_SECONDS (or FINISHED_SHARE) of its total is a
# finish: apps stop a few seconds short, or at the outro. AntennaPod marks an episode
# played the same way (its "smart mark as played", 30 s by default).
FINISHED_SECONDS = 30
FINISHED_SHARE = 0.98
MAX_STRETCH = 12 * 3600  # at most this much a play (a clock gone wrong)
MAX_SPANS = 32  # merged stretches kept per person and episode
QUARTER_US = 900_000_000  # the totals' unit of time: 15 minutes

Spans = list[tuple[int, int]]  # [start, end) in seconds, sorted, apart from each other


def finished(position: int | None, total: int | None) -> bool:
    if position is None or not total:
        return False
    # The 30 s window is at most a tenth of the episode: a 20-s episode is not
    # finished at its start.
    window = total // 10
    if window > FINISHED_SECONDS:  # not min(): this runs for every play counted
        window = FINISHED_SECONDS
    return position >= total - window or position >= total * FINISHED_SHARE


def stretch(started: int | None, position: int | None) -> tuple[int, int] | None:
    """The seconds a play says were played, at most MAX_STRETCH; None when none."""
    if started is None or position is None or position <= started:
        return None
    longest = started + MAX_STRETCH
    return started, position if position < longest else longest


def parse_spans(text: str) -> Spans:
    """Spans as stored: "start-end,start-end"."""
    if not text:
        return []
    return [(int(a), int(b)) for a, _, b in (part.partition("-") for part in text.split(","))]


def format_spans(spans: Spans) -> str:
    if len(spans) == 1:  # most episodes: played in one go, or once
        return f"{spans[0][0]}-{spans[0][1]}"
    return ",".join([f"{a}-{b}" for a, b in spans])


def covered(spans: Spans, new: tuple[int, int]) -> tuple[Spans, int]:
    """(the spans with `new` merged in, the seconds of `new` they did not cover)."""
    start, end = new
    if not spans:  # the episode's first stretch: a history's import is mostly these
        return [new], end - start
    merged: Spans = []
    overlap = 0
    for a, b in spans:
        if b < start or a > end:  # apart (touching ones merge)
            merged.append((a, b))
            continue
        overlap += max(0, min(b, end) - max(a, start))
        start, end = min(a, start), max(b, end)
    added = new[1] - new[0] - overlap
    merged.append((start, end))
    merged.sort()
    while len(merged) > MAX_SPANS:
        gaps = [(merged[i + 1][0] - merged[i][1], i) for i in range(len(merged) - 1)]
        _, i = min(gaps)
        merged[i : i + 2] = [(merged[i][0], merged[i + 1][1])]
    return merged, added


@dataclass(slots=True)
class EpisodeListened:
    """A person's listening of one episode: its merged stretches, and when it was
    first finished (None: never)."""

    spans: Spans = field(default_factory=list)
    finished_at: int | None = None


@dataclass(slots=True)
class Totals:
    """What plays add to the totals: (quarter, feed id) -> [seconds, finishes]."""

    added: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    def play(
        self,
        listened: EpisodeListened,
        feed_id: int,
        occurred_at: int,
        started: int | None,
        position: int | None,
        total: int | None,
    ) -> bool:
        """Count one play of the episode `listened`; whether it changed `listened`."""
        seconds = 0
        played = stretch(started, position)
        if played is not None:
            listened.spans, seconds = covered(listened.spans, played)
        first_finish = listened.finished_at is None and finished(position, total)
        if first_finish:
            listened.finished_at = occurred_at
        if seconds or first_finish:
            self._add(occurred_at, feed_id, seconds, first_finish)
        return played is not None or first_finish

    def only_play(
        self,
        feed_id: int,
        occurred_at: int,
        started: int | None,
        position: int | None,
        total: int | None,
    ) -> None:
        """Count the one play of an episode played never before: `play` of a new
        `EpisodeListened` that nothing keeps. A history's import is mostly these,
        hundreds of thousands: this one makes no object that it does not keep."""
        played = stretch(started, position)
        seconds = 0 if played is None else played[1] - played[0]
        first_finish = finished(position, total)
        if seconds or first_finish:
            self._add(occurred_at, feed_id, seconds, first_finish)

    def _add(self, occurred_at: int, feed_id: int, seconds: int, first_finish: bool) -> None:
        key = (occurred_at // QUARTER_US, feed_id)
        cell = self.added.get(key)
        if cell is None:
            self.added[key] = [seconds, int(first_finish)]
        else:
            cell[0] += seconds
            cell[1] += first_finish
