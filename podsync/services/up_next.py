"""Up next: a person's queue of episodes, kept on the server by podsync alone (the
gpodder and Nextcloud APIs carry no queue, so no app sees it), played in order by
the web UI's player, the next one at the end of each when autoplay is on.

Entries are added by the id of an episode's page, and found again by the feed item
(store/up_next.py), so an id that changes once something is done with the episode
still finds its entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from podsync import timestamps
from podsync.errors import InvalidInput, NotFound
from podsync.model import User
from podsync.services.episode_pages import Episode, EpisodePages
from podsync.storage.engine import Engine
from podsync.store import up_next
from podsync.store.up_next import Queued

MAX_QUEUE = 500  # entries: a queue is read whole for its page
MOVES = ("up", "down", "top", "bottom")


def item_key(episode: Episode) -> tuple[str, str]:
    """The queue's key of an episode: its podcast, and its guid, else its file."""
    kind = f"g{episode.guid}" if episode.guid else f"u{episode.episode_url}"
    return episode.podcast_key, kind


@dataclass(frozen=True, slots=True)
class QueueEntry:
    queued: Queued
    episode: Episode | None  # None: no longer an episode of the person's


class UpNext:
    def __init__(self, db: Engine, pages: EpisodePages) -> None:
        self.db = db
        self.pages = pages

    async def entries(self, user: User) -> list[QueueEntry]:
        async with self.db.read() as conn:
            queued = await up_next.entries(conn, user.id)
        found = []
        for entry in queued:
            try:
                episode: Episode | None = await self.pages.episode(user, entry.ref)
            except NotFound:
                episode = None
            found.append(QueueEntry(entry, episode))
        return found

    async def keys(self, user: User) -> set[tuple[str, str]]:
        async with self.db.read() as conn:
            return {q.key for q in await up_next.entries(conn, user.id)}

    async def autoplay(self, user: User) -> bool:
        async with self.db.read() as conn:
            return await up_next.autoplay(conn, user.id)

    async def set_autoplay(self, user: User, on: bool) -> None:
        async with self.db.write() as conn:
            await up_next.set_autoplay(conn, user.id, on)

    async def add(self, user: User, ref: str, first: bool = False) -> Episode:
        """Queue one of the person's episodes (NotFound when it is not theirs); a
        full queue is refused (InvalidInput), an episode queued already stays."""
        episode = await self.pages.episode(user, ref)
        async with self.db.write() as conn:
            if await up_next.count(conn, user.id) >= MAX_QUEUE:
                raise InvalidInput(
                    f"Up next holds at most {MAX_QUEUE} episodes; play or remove some first"
                )
            await up_next.add(
                conn, user.id, item_key(episode), episode.ref, timestamps.now_us(), first
            )
        return episode

    async def remove(self, user: User, ref: str) -> None:
        try:
            key: tuple[str, str] | None = await self._key(user, ref)
        except NotFound:  # no longer the person's episode: its entry by the id it had
            key = None
        async with self.db.write() as conn:
            if key is None or not await up_next.remove(conn, user.id, key):
                await up_next.remove_ref(conn, user.id, ref)

    async def move(self, user: User, ref: str, how: str, before: str | None = None) -> None:
        """Move an entry up, down, to the top or the bottom, or (`before`, the drag
        of the page's script) just before another entry ("" : last)."""
        key = await self._key(user, ref)
        target = await self._key(user, before) if before else None
        async with self.db.write() as conn:
            order = [q.key for q in await up_next.entries(conn, user.id)]
            if key not in order:
                raise NotFound("That episode is not in Up next.")
            at = order.index(key)
            order.pop(at)
            if before is not None:
                place = order.index(target) if target in order else len(order)
            else:
                place = {"up": max(0, at - 1), "down": min(len(order), at + 1)}.get(
                    how, 0 if how == "top" else len(order)
                )
            order.insert(place, key)
            await up_next.reorder(conn, user.id, order)

    async def next_after(self, user: User, ref: str) -> Episode | None:
        """The episode to play after `ref` ended: the entry after it (after taking
        it off when it was the first: it was just played), else the first entry;
        None when the queue is empty or autoplay is off. Entries no longer the
        person's are skipped."""
        try:
            just_played: tuple[str, str] | None = await self._key(user, ref)
        except NotFound:
            just_played = None
        async with self.db.write() as conn:
            if not await up_next.autoplay(conn, user.id):
                return None
            queued = await up_next.entries(conn, user.id)
            if queued and queued[0].key == just_played:
                await up_next.remove(conn, user.id, queued[0].key)
                queued = queued[1:]
        keys = [q.key for q in queued]
        start = keys.index(just_played) + 1 if just_played in keys else 0
        for entry in queued[start:]:
            try:
                return await self.pages.episode(user, entry.ref)
            except NotFound:
                continue
        return None

    async def _key(self, user: User, ref: str) -> tuple[str, str]:
        return item_key(await self.pages.episode(user, ref))
