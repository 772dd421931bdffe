"""Reading every episode action of the remote account, a page at a time, and storing
them with the upload's rules as they arrive.

A page is read as it arrives: its actions are parsed and stored ACTION_CHUNK at a
time, so what is alive at once is one slice, never the page. What the import
remembers is bounded by what may be kept: the digest of each usable action (to tell
a page that brings nothing new), at most SKIPPED_REMEMBERED of the unusable ones,
and the devices the actions name, at most as many as the user may have.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from podsync import timestamps
from podsync.model import User
from podsync.services.episodes.items import SkipItem, parse_client_time, parse_item
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.remote_import.bounds import ImportBoundReached, ImportBounds
from podsync.services.remote_import.client import RemoteClient, RemoteError
from podsync.services.remote_import.json_stream import Element, Member, Opened
from podsync.services.remote_import.report import RemoteImportReport
from podsync.storage.through import through
from podsync.store.episodes import EpisodeAction

# Actions parsed and written per transaction: a short hold of the write lock, never
# across a remote call (1000 kept another user's requests waiting 0.3 s on a loaded
# two-core machine, 500 about 0.1 s).
ACTION_CHUNK = 500
# Unusable actions remembered so that one sent again on a later page is counted
# once; past this many, a repeat is counted again (the report's total grows, memory
# does not).
SKIPPED_REMEMBERED = 10_000
NO_TIME = "no usable time (missing, malformed, or more than a day ahead)"
DEVICE_LIMIT = "names a new device past the device limit (gpodder.max_devices_per_user)"
_NUMBER = re.compile(r"-?\d+")

Parsed = EpisodeAction


@dataclass
class Remembered:
    """What one import remembers of the actions it read."""

    kept: set[int] = field(default_factory=set)  # digests of usable actions
    skipped: set[int] = field(default_factory=set)  # of unusable ones, bounded
    devices: dict[str, None] = field(default_factory=dict)  # named, in order, bounded
    max_devices: int = 0


def parse_page(
    items: Sequence[Any], now: int, seen: Remembered
) -> tuple[list[Parsed], Counter[str], int]:
    """One slice's actions as the upload rules read them (pure, run in a thread):
    what to store, the skipped by reason, and how many were new to this run (an
    action seen on an earlier page is not new). An action without a time of its own
    is skipped: the time of receipt would make it a new action on every run."""
    parsed: list[Parsed] = []
    skipped: Counter[str] = Counter()
    fresh = 0
    rewrites: dict[str, str] = {}
    for item in items:
        marker = _marker(item)
        if marker in seen.kept or marker in seen.skipped:
            continue
        fresh += 1
        reason = None
        if not isinstance(item, dict):
            reason = "not an object"
        elif parse_client_time(item.get("timestamp"), now) == now:
            reason = NO_TIME
        else:
            try:
                action = parse_item(item, now, rewrites)
            except SkipItem as exc:
                reason = _NUMBER.sub("N", str(exc))  # one reason, whatever the number
        if reason is not None:
            skipped[reason] += 1
            if len(seen.skipped) < SKIPPED_REMEMBERED:
                seen.skipped.add(marker)
            continue
        seen.kept.add(marker)
        if action.device_id is not None and len(seen.devices) < seen.max_devices:
            seen.devices.setdefault(action.device_id, None)
        parsed.append(action)
    return parsed, skipped, fresh


def _marker(item: Any) -> int:
    """What tells an action seen on an earlier page (the same server writes it the
    same way each time): 8 bytes of a digest of its repr, four times cheaper than
    JSON, and an int is the smallest thing a set holds."""
    digest = hashlib.blake2b(repr(item).encode("utf-8", "replace"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


@dataclass
class ReadPosition:
    """How far the episode actions were read: the `since` that reads on from the
    last answer read whole. A stopped import keeps it; the next one goes on there."""

    since: str = "0"


@dataclass
class Page:
    items: int = 0  # actions in the answer
    fresh: int = 0  # of them new to this run
    timestamp: int | str | None = None
    has_list: bool = False


class ActionReader:
    """The episode actions pass of one import."""

    def __init__(
        self,
        episodes: EpisodeWrites,
        user: User,
        report: RemoteImportReport,
        bounds: ImportBounds,
        position: ReadPosition,
        say: Callable[[str], None],
    ) -> None:
        self.episodes = episodes
        self.position = position
        self.user = user
        self.report = report
        self.bounds = bounds
        self.say = say
        self.seen = Remembered(max_devices=bounds.max_devices)
        self.read = 0  # actions read, repeats and junk included (the bound)

    async def run(self, remote: RemoteClient) -> None:
        longest = 0
        while True:
            since = self.position.since
            page = await self._page(remote, since)
            longest = max(longest, page.items)
            if page.fresh:
                self.say(f"{self.report.actions_read:,} episode actions read")
            # mygpo pages by time (>=): a full page of one second comes back for ever,
            # and the actions after it cannot be reached. (A Nextcloud server answers
            # everything at once; podsync's sends the last minute again: not stuck.)
            full = page.items and page.items == longest and self.report.api == "gpodder"
            same_time = str(page.timestamp) == since
            if page.fresh == 0 and full and same_time:
                raise RemoteError(
                    remote.episodes_call(since),
                    f"the same {page.items} actions came back again: more actions "
                    "share one time than the server sends in one answer, so the ones "
                    "after them cannot be read through this API",
                )
            # The last answer brought nothing new, or the server's clock did not move:
            # every action it has was read.
            self.position.since = str(page.timestamp)
            if page.fresh == 0 or same_time:
                return

    async def _page(self, remote: RemoteClient, since: str) -> Page:
        page = Page()
        pending: list[Any] = []
        query = {"since": since}
        async with aclosing(remote.answer(remote.episodes_path(), query)) as events:
            async for event in events:
                if isinstance(event, Element) and event.key == "actions":
                    page.items += 1
                    self.read += 1
                    if self.read > self.bounds.max_actions_read:
                        raise ImportBoundReached(self.bounds.actions_read_message())
                    pending.append(event.value)
                    if len(pending) == ACTION_CHUNK:
                        page.fresh += await self._store(pending)
                        pending = []
                elif isinstance(event, Opened) and event.key == "actions":
                    page.has_list = True
                elif isinstance(event, Member) and event.key == "timestamp":
                    page.timestamp = event.value
        call = remote.episodes_call(since)
        if not page.has_list:
            raise RemoteError(call, "the answer has no list of actions")
        if isinstance(page.timestamp, bool) or not isinstance(page.timestamp, int | str):
            raise RemoteError(call, "the answer has no timestamp")
        if pending:
            page.fresh += await self._store(pending)
        return page

    async def _store(self, items: list[Any]) -> int:
        """Parse and store one slice; how many of its actions were new."""
        now = timestamps.now_us()
        parsed, skipped, fresh = await asyncio.to_thread(parse_page, items, now, self.seen)
        report = self.report
        report.actions_read += fresh
        report.skip_actions(skipped)
        if parsed:
            # A stop (SIGTERM, Cancel) waits for the write: what it committed is counted.
            await through(self._write(parsed))
        return fresh

    async def _write(self, parsed: list[EpisodeAction]) -> None:
        stored = await self.episodes.store_imported(self.user.id, parsed)
        report = self.report
        report.actions_added += stored.added
        report.actions_already += stored.already
        if stored.refused_device:
            report.skip_actions(Counter({DEVICE_LIMIT: stored.refused_device}))

    def devices_named(self) -> list[str]:
        return list(self.seen.devices)
