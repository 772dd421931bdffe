"""An episode as a person left it, read from their actions on it: finished, in
progress (where, on which device, when) or not played, as the apps understand it.

- A play that stops within FINISHED_SECONDS (or FINISHED_SHARE) of its total is a
  finish: apps stop a few seconds short, or at the outro. AntennaPod marks an
  episode played the same way (its "smart mark as played", 30 s by default). For
  an episode shorter than ten times that, the window is a tenth of its length: a
  30-s episode is not "Finished" at its start.
- A play at position 0 is not a start: it is what "mark as not played" writes
  (with a `new` action, which AntennaPod sends when a person marks an episode
  unplayed), and what a player sends when it is stopped before it played.
- A `new` later than the latest play makes the episode not played again.

Pure: no database, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from podsync.store.listening import HistoryRow

FINISHED_SECONDS = 30
FINISHED_SHARE = 0.98

NOT_PLAYED, IN_PROGRESS, FINISHED = "not_played", "in_progress", "finished"
LABELS = {NOT_PLAYED: "Not played", IN_PROGRESS: "In progress", FINISHED: "Finished"}


def finished(position: int | None, total: int | None) -> bool:
    if position is None or not total:
        return False
    window = min(FINISHED_SECONDS, total // 10)
    return position >= total - window or position >= total * FINISHED_SHARE


@dataclass(slots=True)
class EpisodeState:
    """One episode as this person left it: the latest action of each kind, and the
    latest of all."""

    episode_url: str
    guid: str | None
    latest: HistoryRow
    play: HistoryRow | None = None
    download: HistoryRow | None = None
    delete: HistoryRow | None = None
    new: HistoryRow | None = None
    actions: int = 0

    @property
    def episode_id(self) -> int:
        return self.latest.episode_id


_KINDS = ("play", "download", "delete", "new")


def states(rows: Iterable[HistoryRow]) -> list[EpisodeState]:
    """Actions newest first grouped by episode (media URL), newest first by the
    latest action of each, with the latest action of each kind."""
    episodes: dict[str, EpisodeState] = {}
    for row in rows:  # newest first: the first of each kind is the latest
        state = episodes.get(row.episode_url)
        if state is None:
            state = episodes[row.episode_url] = EpisodeState(row.episode_url, row.guid, row)
        state.actions += 1
        if row.action in _KINDS and getattr(state, row.action) is None:
            setattr(state, row.action, row)
        if state.guid is None and row.guid:
            state.guid = row.guid
    return list(episodes.values())


def played(state: EpisodeState | None) -> str:
    """NOT_PLAYED, IN_PROGRESS or FINISHED (see the module)."""
    if state is None or state.play is None:
        return NOT_PLAYED
    play, new = state.play, state.new
    if new is not None and new.key > play.key:
        return NOT_PLAYED
    if finished(play.position, play.total):
        return FINISHED
    return IN_PROGRESS if play.position else NOT_PLAYED


def newer(a: HistoryRow | None, b: HistoryRow | None) -> HistoryRow | None:
    if a is None or b is None:
        return a or b
    return a if a.key >= b.key else b


def merged(a: EpisodeState, b: EpisodeState) -> EpisodeState:
    """One feed item acted on under two media URLs (the host moved the file)."""
    latest = newer(a.latest, b.latest)
    assert latest is not None
    first = a if latest is a.latest else b
    return EpisodeState(
        first.episode_url,
        first.guid or a.guid or b.guid,
        latest,
        newer(a.play, b.play),
        newer(a.download, b.download),
        newer(a.delete, b.delete),
        newer(a.new, b.new),
        a.actions + b.actions,
    )
