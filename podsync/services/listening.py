"""What a person listened to, for the web UI: the history in the order things
happened, "Continue listening", and each episode's latest state on a podcast's page.

All of it reads the episode actions the apps uploaded (`store.listening`), newest
first by the action's own time; nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from podsync.model import User
from podsync.storage.engine import Engine
from podsync.store import browse, devices, listening
from podsync.store.devices import Device
from podsync.store.listening import HistoryFilter, HistoryKey, HistoryRow

HISTORY_PAGE = 50
# A play that stops this close to the end (seconds, or share of the length) is a
# finished episode: apps stop a few seconds short, or at the outro.
FINISHED_SECONDS = 30
FINISHED_SHARE = 0.98
# Continue listening reads plays newest first in chunks, until it has enough
# episodes or has read this many plays (a bounded cost on any history).
PLAYS_CHUNK = 200
PLAYS_READ_MAX = 5000
PODCAST_ACTIONS_MAX = 2000


def finished(position: int | None, total: int | None) -> bool:
    if position is None or not total:
        return False
    return position >= total - FINISHED_SECONDS or position >= total * FINISHED_SHARE


@dataclass(frozen=True, slots=True)
class HistoryPage:
    rows: list[HistoryRow]
    older_than: HistoryKey | None  # `before` of the next (older) page, if any
    newer_than: HistoryKey | None  # `after` of the previous (newer) page, if any


@dataclass(frozen=True, slots=True)
class ContinueListening:
    in_progress: list[HistoryRow]
    finished: list[HistoryRow]


@dataclass(slots=True)
class EpisodeState:
    """One episode of a podcast as this person left it: the latest action of each
    kind, and the latest of all (what the page calls its state)."""

    episode_url: str
    guid: str | None
    latest: HistoryRow
    play: HistoryRow | None = None
    download: HistoryRow | None = None
    delete: HistoryRow | None = None
    actions: int = 0


class ListeningService:
    def __init__(self, db: Engine) -> None:
        self.db = db

    async def history(
        self,
        user: User,
        only: HistoryFilter,
        before: HistoryKey | None,
        after: HistoryKey | None,
        limit: int = HISTORY_PAGE,
    ) -> HistoryPage:
        async with self.db.read() as conn:
            # One row past the page tells whether there is more in its direction.
            rows = await listening.history_page(conn, user.id, only, before, after, limit + 1)
            backwards = after is not None
            more = len(rows) > limit
            if more:
                rows = rows[1:] if backwards else rows[:limit]
            older = newer = None
            if rows:
                if backwards:
                    newer = rows[0].key if more else None
                else:
                    older = rows[-1].key if more else None
                # The other direction: nothing newer than the first page.
                if backwards or before is not None:
                    pivot, newer_side = (rows[-1].key, False) if backwards else (rows[0].key, True)
                    if await listening.history_exists(conn, user.id, only, pivot, newer_side):
                        if backwards:
                            older = pivot
                        else:
                            newer = pivot
        return HistoryPage(rows, older, newer)

    async def filters(self, user: User) -> tuple[list[tuple[str, str, str | None]], list[Device]]:
        """(podcasts in the history as (key, url, title), devices) for the filters."""
        async with self.db.read() as conn:
            podcasts = await browse.history_podcasts(conn, user.id)
            device_list = await devices.list_for_user(conn, user.id)
        return podcasts, device_list

    async def continue_listening(
        self, user: User, in_progress: int = 8, done: int = 4
    ) -> ContinueListening:
        """The episodes in progress (the latest play of each stops short of the end),
        newest first, and the last few finished."""
        going: list[HistoryRow] = []
        ended: list[HistoryRow] = []
        seen: set[str] = set()
        before: HistoryKey | None = None
        read = 0
        async with self.db.read() as conn:
            while len(going) < in_progress or len(ended) < done:
                rows = await listening.latest_plays(conn, user.id, before, PLAYS_CHUNK)
                for row in rows:
                    if row.episode_url in seen:
                        continue  # an older play of an episode already placed
                    seen.add(row.episode_url)
                    if finished(row.position, row.total):
                        if len(ended) < done:
                            ended.append(row)
                    elif len(going) < in_progress:
                        going.append(row)
                read += len(rows)
                if len(rows) < PLAYS_CHUNK or read >= PLAYS_READ_MAX:
                    break
                before = rows[-1].key
        return ContinueListening(going, ended)

    async def podcast(self, user: User, podcast_key: str) -> tuple[list[EpisodeState], list[str]]:
        """Each episode of one podcast this person acted on, newest first by its latest
        action, with the latest action of each kind; and the devices that sent them."""
        async with self.db.read() as conn:
            rows = await listening.podcast_actions(conn, user.id, podcast_key, PODCAST_ACTIONS_MAX)
            device_ids = await listening.podcast_devices(conn, user.id, podcast_key)
        episodes: dict[str, EpisodeState] = {}
        for row in rows:  # newest first: the first of each kind is the latest
            state = episodes.get(row.episode_url)
            if state is None:
                state = episodes[row.episode_url] = EpisodeState(row.episode_url, row.guid, row)
            state.actions += 1
            if row.action in ("play", "download", "delete") and getattr(state, row.action) is None:
                setattr(state, row.action, row)
            if state.guid is None and row.guid:
                state.guid = row.guid
        return list(episodes.values()), device_ids
