"""What a person does with an episode in the web UI, written as an app would write
it: play actions of a device `web` ("Web browser"), typed, through the one write
path of episode actions (the same rules, bounds and per-user numbers as an app's
upload), its syncs noted as any device's. AntennaPod, gPodder and Kasts read them at their
next sync as they read each other's.

- Progress: a play (`started`, `position`, `total`) every 30 s while the page's
  player plays, on pause and at the end.
- Mark played: a play at `position = total`, started there too (as AntennaPod
  uploads the episodes it has as played on its first sync: nothing listened to,
  so the statistics count no time for it).
- Mark not played: a play at 0 and a `new` (what AntennaPod sends when a person
  marks an episode unplayed).

The device is made on first use. An account at `gpodder.max_devices_per_user`
without it is refused (LimitExceeded, naming the limit): nothing is written. A save
is three transactions: the episode read, one write (the device when new, the
actions, the device's sync time at most once a minute), the episode read back.
"""

from __future__ import annotations

from dataclasses import dataclass

from podsync import timestamps
from podsync.errors import InvalidInput
from podsync.model import User
from podsync.services.episode_pages import Episode, EpisodePages
from podsync.services.episode_state import FINISHED, played
from podsync.services.episodes import actions
from podsync.services.episodes.items import INT32_MAX
from podsync.services.episodes.writes import AsDevice, EpisodeWrites
from podsync.services.sync_health import SyncHealth
from podsync.store.episodes import EpisodeAction

WEB_DEVICE = "web"
BULK_CHUNK = 200  # play actions a bulk mark uploads at a time
MAX_BULK = 1000  # episodes one bulk mark may name
WEB_CAPTION = "Web browser"
_AS_WEB = AsDevice(WEB_DEVICE, WEB_CAPTION)
NO_LENGTH = (
    "podsync does not know how long this episode is (its feed does not say, and no "
    "app has played it yet), so it cannot be marked played; play it here a moment, "
    "or mark it in an app"
)


@dataclass(frozen=True, slots=True)
class Progress:
    started: int
    position: int
    total: int


def check_progress(started: int | None, position: int | None, total: int | None) -> Progress:
    """The three numbers of a play, each 0 to 2^31 - 1 seconds, the position within
    the total; InvalidInput otherwise."""
    if started is None or position is None or total is None:
        raise InvalidInput("started, position and total must be whole numbers of seconds")
    if not (0 <= started <= INT32_MAX and 0 <= position <= INT32_MAX and 0 < total <= INT32_MAX):
        raise InvalidInput("started, position and total are out of range")
    return Progress(min(started, total), min(position, total), total)


class WebListening:
    def __init__(
        self,
        pages: EpisodePages,
        writes: EpisodeWrites,
        health: SyncHealth,
    ) -> None:
        self.pages = pages
        self.writes = writes
        self.health = health

    async def progress(self, user: User, ref: str, progress: Progress) -> Episode:
        """A stretch listened to in the page's player; the episode as it is now."""
        episode = await self.pages.episode(user, ref)
        now = timestamps.now_us()
        await self._write(
            user, [_play(episode, now, progress.started, progress.position, progress.total)], now
        )
        return await self.pages.episode(user, episode.ref)

    async def mark(self, user: User, ref: str, played: bool) -> Episode:
        episode = await self.pages.episode(user, ref)
        now = timestamps.now_us()
        if played:
            total = length_of(episode)
            if total is None:
                raise InvalidInput(NO_LENGTH)
            written = [_play(episode, now, total, total, total)]
        else:
            total = length_of(episode) or 0
            written = [_play(episode, now, 0, 0, total), _action(episode, now, "new")]
        await self._write(user, written, now)
        return await self.pages.episode(user, episode.ref)

    async def mark_many(self, user: User, refs: list[str]) -> tuple[int, int]:
        """Mark several episodes played at once (a bulk mark): (how many were marked,
        how many were left because podsync does not know their length). NotFound
        for an id that is not the person's: nothing is written then. Episodes
        finished already are left as they are."""
        now = timestamps.now_us()
        written = []
        unknown = 0
        for ref in dict.fromkeys(refs):
            episode = await self.pages.episode(user, ref)
            if played(episode.state) == FINISHED:
                continue
            total = length_of(episode)
            if total is None:
                unknown += 1
                continue
            written.append(_play(episode, now, total, total, total))
        for start in range(0, len(written), BULK_CHUNK):
            await self._write(user, written[start : start + BULK_CHUNK], now)
        return len(written), unknown

    async def _write(self, user: User, written: list[EpisodeAction], now: int) -> None:
        """One write: the device made when new, the actions, the sync noted when due."""
        note = self.health.synced_in(user.id, WEB_DEVICE)
        await self.writes.record(user.id, written, now, as_device=_AS_WEB, then=note)


def length_of(episode: Episode) -> int | None:
    """How long the episode is, in seconds: the feed's duration, else the total of
    the latest play that has one."""
    if episode.item is not None and episode.item.duration:
        return episode.item.duration
    play = episode.state.play if episode.state is not None else None
    return play.total if play is not None and play.total else None


def _action(episode: Episode, now: int, kind: str) -> EpisodeAction:
    return actions.action(
        episode.podcast_url, episode.episode_url, episode.guid or None, kind, now, WEB_DEVICE
    )


def _play(episode: Episode, now: int, started: int, position: int, total: int) -> EpisodeAction:
    return actions.play(
        episode.podcast_url, episode.episode_url, episode.guid or None, now, WEB_DEVICE,
        started, position, total,
    )  # fmt: skip
