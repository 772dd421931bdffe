"""What a person does with an episode in the web UI, written as an app would write
it: play actions of a gpodder device `web` ("Web browser"), through the same
episode service as a gpodder upload (the same rules, bounds and per-user numbers),
its syncs noted as any device's. AntennaPod, gPodder and Kasts read them at their
next sync as they read each other's.

- Progress: a play (`started`, `position`, `total`) every 30 s while the page's
  player plays, on pause and at the end.
- Mark played: a play at `position = total`, started there too (as AntennaPod
  uploads the episodes it has as played on its first sync: nothing listened to,
  so the statistics count no time for it).
- Mark not played: a play at 0 and a `new` (what AntennaPod sends when a person
  marks an episode unplayed).

The device is made on first use. An account at `gpodder.max_devices_per_user`
without it is refused (LimitExceeded, naming the limit): nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.errors import InvalidInput
from podsync.model import User
from podsync.services.episode_pages import Episode, EpisodePages
from podsync.services.episode_state import FINISHED, played
from podsync.services.gpodder.devices import DeviceService
from podsync.services.gpodder.episodes import INT32_MAX, EpisodeService
from podsync.services.sync_health import SyncHealth

WEB_DEVICE = "web"
BULK_CHUNK = 200  # play actions a bulk mark uploads at a time
MAX_BULK = 1000  # episodes one bulk mark may name
WEB_CAPTION = "Web browser"
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
        devices: DeviceService,
        episodes: EpisodeService,
        health: SyncHealth,
    ) -> None:
        self.pages = pages
        self.devices = devices
        self.episodes = episodes
        self.health = health

    async def progress(self, user: User, ref: str, progress: Progress) -> Episode:
        """A stretch listened to in the page's player; the episode as it is now."""
        episode = await self.pages.episode(user, ref)
        item = _play(episode, progress.started, progress.position, progress.total)
        await self._write(user, [item])
        return await self.pages.episode(user, episode.ref)

    async def mark(self, user: User, ref: str, played: bool) -> Episode:
        episode = await self.pages.episode(user, ref)
        if played:
            total = length_of(episode)
            if total is None:
                raise InvalidInput(NO_LENGTH)
            items = [_play(episode, total, total, total)]
        else:
            total = length_of(episode) or 0
            items = [_play(episode, 0, 0, total), _action(episode, "new")]
        await self._write(user, items)
        return await self.pages.episode(user, episode.ref)

    async def mark_many(self, user: User, refs: list[str]) -> tuple[int, int]:
        """Mark several episodes played at once (a bulk mark): (how many were marked,
        how many were left because podsync does not know their length). NotFound
        for an id that is not the person's: nothing is written then. Episodes
        finished already are left as they are."""
        items = []
        unknown = 0
        for ref in dict.fromkeys(refs):
            episode = await self.pages.episode(user, ref)
            if played(episode.state) == FINISHED:
                continue
            total = length_of(episode)
            if total is None:
                unknown += 1
                continue
            items.append(_play(episode, total, total, total))
        for start in range(0, len(items), BULK_CHUNK):
            await self._write(user, items[start : start + BULK_CHUNK])
        return len(items), unknown

    async def _write(self, user: User, items: list[dict[str, Any]]) -> None:
        await self.devices.ensure(user.id, WEB_DEVICE, WEB_CAPTION)
        upload = await self.episodes.upload(user.id, items, device_id=WEB_DEVICE)
        if upload.skipped:  # the device went away, or a URL the rules refuse
            raise InvalidInput("the episode could not be recorded (its address is not usable)")
        await self.health.synced(user.id, WEB_DEVICE)


def length_of(episode: Episode) -> int | None:
    """How long the episode is, in seconds: the feed's duration, else the total of
    the latest play that has one."""
    if episode.item is not None and episode.item.duration:
        return episode.item.duration
    play = episode.state.play if episode.state is not None else None
    return play.total if play is not None and play.total else None


def _action(episode: Episode, action: str) -> dict[str, Any]:
    item: dict[str, Any] = {
        "podcast": episode.podcast_url,
        "episode": episode.episode_url,
        "action": action,
    }
    if episode.guid:
        item["guid"] = episode.guid
    return item


def _play(episode: Episode, started: int, position: int, total: int) -> dict[str, Any]:
    item = _action(episode, "play")
    item.update(started=started, position=position)
    if total:
        item["total"] = total
    return item
