"""What a person listened to, for the web UI: the history in the order things
happened, "Continue listening", and each episode's latest state on a podcast's page.

All of it reads the episode actions the apps uploaded (`store.listening`), newest
first by the action's own time; nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from podsync.model import User
from podsync.services.episode_state import (
    FINISHED,
    IN_PROGRESS,
    NOT_PLAYED,
    EpisodeState,
    finished,
    merged,
    played,
    states,
)
from podsync.storage.engine import Engine
from podsync.store import (
    Connection,
    browse,
    devices,
    feed_info,
    listening,
    meta,
    player,
    podcast_page,
)
from podsync.store.devices import Device
from podsync.store.feed_info import FeedItem
from podsync.store.listening import HistoryFilter, HistoryKey, HistoryRow

__all__ = ["FILTERS", "EpisodeState", "ListeningService", "PodcastEpisode", "finished"]

HISTORY_PAGE = 50
# A podcast page's filters: its episodes in each of these states.
FILTERS = (NOT_PLAYED, IN_PROGRESS, FINISHED)
# Continue listening reads plays newest first in chunks, until it has enough
# episodes or has read this many plays (a bounded cost on any history).
PLAYS_CHUNK = 200
PLAYS_READ_MAX = 5000
# Continue listening shows this many episodes in progress a page.
CONTINUE_PAGE = 10
PODCAST_ACTIONS_MAX = 2000
# A podcast's page lists this many episodes (a feed can hold thousands).
PODCAST_PAGE = 100


@dataclass(frozen=True, slots=True)
class HistoryPage:
    rows: list[HistoryRow]
    older_than: HistoryKey | None  # `before` of the next (older) page, if any
    newer_than: HistoryKey | None  # `after` of the previous (newer) page, if any


@dataclass(frozen=True, slots=True)
class ContinueListening:
    in_progress: list[HistoryRow]
    finished: list[HistoryRow]
    more: bool = False  # more in progress past this page


@dataclass(frozen=True, slots=True)
class PodcastEpisode:
    """One episode on a podcast's page."""

    episode_url: str  # "" for a feed item without an enclosure
    guid: str | None
    title: str | None  # as the feed names it (None: not in the feed)
    published_at: int | None
    state: EpisodeState | None  # this person's latest actions; None: never acted on
    listed: bool  # in the feed as last fetched
    duration: int | None = None  # seconds, as the feed says


@dataclass(frozen=True, slots=True)
class PodcastEpisodes:
    episodes: list[PodcastEpisode]
    page: int  # 1-based, within 1..pages
    pages: int
    total: int
    in_feed: int  # episode rows of the feed as last fetched (0: not fetched)
    unlisted: int  # episodes acted on that the feed does not list
    devices: list[str]  # the device ids that sent actions on it

    @property
    def from_feed(self) -> bool:
        """Whether the feed's episodes are listed (else only those acted on)."""
        return self.in_feed > 0


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
        async with self.db.snapshot() as conn:
            await meta.keyed_plans(conn)
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
        self, user: User, page: int = 1, in_progress: int = CONTINUE_PAGE, done: int = 4
    ) -> ContinueListening:
        """The episodes in progress (the latest play of each stops short of the end),
        newest first, a page at a time, and the last few finished. An episode the
        person removed from the list stays out until a play of it happens later."""
        skip = (max(1, page) - 1) * in_progress
        want = skip + in_progress + 1  # one past the page: whether there is more
        going: list[HistoryRow] = []
        ended: list[HistoryRow] = []
        seen: set[str] = set()
        before: HistoryKey | None = None
        read = 0
        async with self.db.snapshot() as conn:
            await meta.keyed_plans(conn)
            while len(going) < want or len(ended) < done:
                rows = await listening.latest_plays(conn, user.id, before, PLAYS_CHUNK)
                candidates: list[HistoryRow] = []
                for row in rows:
                    if row.episode_url in seen:
                        continue  # an older play of an episode already placed
                    seen.add(row.episode_url)
                    if not row.position:
                        continue  # a play at 0: not started (or marked not played)
                    if finished(row.position, row.total):
                        if len(ended) < done:
                            ended.append(row)
                    else:
                        candidates.append(row)
                removed = await player.removed_from_continue(
                    conn, user.id, {r.episode_id for r in candidates}
                )
                for row in candidates:
                    if len(going) < want and row.occurred_at > removed.get(row.episode_id, -1):
                        going.append(row)
                read += len(rows)
                if len(rows) < PLAYS_CHUNK or read >= PLAYS_READ_MAX:
                    break
                before = rows[-1].key
        page_rows = going[skip : skip + in_progress]
        return ContinueListening(page_rows, ended, more=len(going) > skip + in_progress)

    async def podcast(
        self,
        user: User,
        podcast_key: str,
        page: int,
        per_page: int = PODCAST_PAGE,
        only: str | None = None,
    ) -> PodcastEpisodes:
        """One podcast's episodes, a page at a time: the feed's (as the fetcher last
        read it) newest first, then the episodes this person acted on that the feed
        no longer lists, newest first by their latest action; each with this
        person's latest state (None: never acted on). Without a fetched feed, the
        episodes acted on. `only`: those in one of FILTERS' states (the feed's
        items are then all read: up to the fetcher's 5,000). Read on a worker
        thread: up to PODCAST_ACTIONS_MAX actions are grouped here."""
        async with self.db.read(threaded=True) as conn:
            rows = await listening.podcast_actions(conn, user.id, podcast_key, PODCAST_ACTIONS_MAX)
            device_ids = await listening.podcast_devices(conn, user.id, podcast_key)
            in_feed = await podcast_page.episode_count(conn, podcast_key)
            acted = states(rows)
            matched, unlisted = await _match(conn, podcast_key, acted) if in_feed else ({}, acted)
            if only is not None:
                every = await podcast_page.newest_episodes(conn, podcast_key, 0, in_feed)
                chosen = [
                    e
                    for e in [*_listed(every, matched), *_unlisted(unlisted)]
                    if played(e.state) == only
                ]
                pages = max(1, -(-len(chosen) // per_page))
                page = min(max(page, 1), pages)
                shown = chosen[(page - 1) * per_page : page * per_page]
                return PodcastEpisodes(
                    shown, page, pages, len(chosen), in_feed, len(unlisted), device_ids
                )
            total = in_feed + len(unlisted)
            pages = max(1, -(-total // per_page))
            page = min(max(page, 1), pages)
            offset = (page - 1) * per_page
            items = (
                await podcast_page.newest_episodes(conn, podcast_key, offset, per_page)
                if offset < in_feed
                else []
            )
        episodes = _listed(items, matched)
        start = max(0, offset - in_feed)
        episodes += _unlisted(unlisted[start : start + per_page - len(items)])
        return PodcastEpisodes(episodes, page, pages, total, in_feed, len(unlisted), device_ids)

    async def podcast_counts(self, user: User, podcast_key: str) -> dict[str, int]:
        """How many of a podcast's episodes are in each of FILTERS' states, and in all
        ("": the feed's items and the episodes acted on it no longer lists), for the
        counts on a podcast page's filters. Reads what a filtered page reads."""
        async with self.db.read(threaded=True) as conn:
            rows = await listening.podcast_actions(conn, user.id, podcast_key, PODCAST_ACTIONS_MAX)
            in_feed = await podcast_page.episode_count(conn, podcast_key)
            acted = states(rows)
            matched, unlisted = await _match(conn, podcast_key, acted) if in_feed else ({}, acted)
            every = (
                await podcast_page.newest_episodes(conn, podcast_key, 0, in_feed) if in_feed else []
            )
        counts = dict.fromkeys(FILTERS, 0)
        episodes = [*_listed(every, matched), *_unlisted(unlisted)]
        for episode in episodes:
            counts[played(episode.state)] += 1
        counts[""] = len(episodes)
        return counts


def _listed(
    items: list[FeedItem], matched: dict[tuple[str, str], EpisodeState]
) -> list[PodcastEpisode]:
    episodes: list[PodcastEpisode] = []
    shown: set[tuple[str, str]] = set()
    for item in items:
        key = _item_key(item.episode_url, item.guid)
        if key in shown:  # another enclosure of an item already listed
            continue
        shown.add(key)
        episodes.append(
            PodcastEpisode(
                item.episode_url,
                item.guid or None,
                item.title,
                item.published_at,
                matched.get(key),
                listed=True,
                duration=item.duration,
            )
        )
    return episodes


def _unlisted(acted: list[EpisodeState]) -> list[PodcastEpisode]:
    return [PodcastEpisode(s.episode_url, s.guid, None, None, s, listed=False) for s in acted]


def _item_key(episode_url: str, guid: str) -> tuple[str, str]:
    """One feed item: by its guid when it has one (all its enclosures), else by its
    enclosure URL."""
    return ("guid", guid) if guid else ("url", episode_url)


async def _match(
    conn: Connection, podcast_key: str, states: list[EpisodeState]
) -> tuple[dict[tuple[str, str], EpisodeState], list[EpisodeState]]:
    """Each state's feed item, as episode titles are matched (by the guid when the
    action has one the feed lists, else by the media URL): ({item: state}, the
    states of episodes the feed does not list, in their order)."""
    found = await feed_info.episode_titles(
        conn,
        ((podcast_key, s.episode_url) for s in states),
        ((podcast_key, s.guid) for s in states if s.guid),
    )
    guids = {r.guid for r in found if r.guid}
    by_url = {r.episode_url: _item_key(r.episode_url, r.guid or "") for r in found}
    matched: dict[tuple[str, str], EpisodeState] = {}
    unlisted: list[EpisodeState] = []
    for state in states:
        key = ("guid", state.guid) if state.guid in guids else by_url.get(state.episode_url)
        if key is None:
            unlisted.append(state)
        else:
            before = matched.get(key)
            matched[key] = state if before is None else merged(before, state)
    return matched, unlisted
