"""Arriving with your history: a remote account's subscriptions and every episode
action, read from another server (gpodder.net v2 API or Nextcloud GPodder Sync) and
applied to a podsync account with the same rules as an upload.

What is applied stays applied, and applying it again adds nothing, so an import that
stops half way (a remote that fails, a limit, a bound of `ImportBounds`) is
completed by running it again. `jobs.ImportJobs` runs imports, one per user at a
time, and keeps their state and report in the database.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from podsync import timestamps
from podsync.errors import LimitExceeded
from podsync.model import User
from podsync.opml import OutlineFeed
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.opml_io import ImportPlan, OpmlService
from podsync.services.remote_import.actions import ActionReader, ReadPosition
from podsync.services.remote_import.bounds import ImportBoundReached, ImportBounds
from podsync.services.remote_import.client import (
    RemoteAccount,
    RemoteClient,
    RemoteError,
    RemoteRefusedAddress,
    RemoteUnauthorized,
)
from podsync.services.remote_import.feed_lists import (
    FeedLists,
    device_ids,
    feeds_bound,
    read_device_lists,
    read_nextcloud_list,
    read_removals,
    read_simple_list,
)
from podsync.services.remote_import.report import RemoteImportReport
from podsync.storage.through import through

__all__ = [
    "ImportBoundReached",
    "ImportBounds",
    "RemoteAccount",
    "RemoteError",
    "RemoteImportReport",
    "RemoteImportService",
    "RemoteRefusedAddress",
    "RemoteUnauthorized",
]

# Feeds subscribed per transaction: a short hold of the write lock and of the event
# loop (the OPML import's 1000 hold it for a few hundred ms on a loaded machine).
FEED_CHUNK = 250

Say = Callable[[str], None]


class RemoteImportService:
    def __init__(self, opml: OpmlService, episodes: EpisodeWrites, bounds: ImportBounds) -> None:
        self.opml = opml
        self.episodes = episodes
        self.bounds = bounds

    def client(self, account: RemoteAccount, *, allow_private: bool) -> RemoteClient:
        return RemoteClient(account, self.bounds, allow_private=allow_private)

    async def run(
        self,
        user: User,
        remote: RemoteClient,
        report: RemoteImportReport,
        position: ReadPosition,
        say: Say | None = None,
    ) -> None:
        """Read the signed-in `remote` and apply it to `user`, filling `report` and
        `position` as it goes (a caller that cancels the import still has both).
        RemoteError when nothing at all could be read; a failure or a bound later
        ends the import with `report.error` set. `position`: where the episode
        actions are read from (an earlier, stopped import's), and then to."""
        say = say or (lambda _text: None)
        report.api = remote.api or ""
        actions = ActionReader(self.episodes, user, report, self.bounds, position, say)
        try:
            await self._read_all(user, remote, report, actions, say)
        except RemoteError as exc:  # a refused password too, past the sign-in
            if report.read_nothing:
                raise
            report.error = str(exc)
        except (LimitExceeded, ImportBoundReached) as exc:
            report.error = str(exc)

    async def _read_all(
        self,
        user: User,
        remote: RemoteClient,
        report: RemoteImportReport,
        actions: ActionReader,
        say: Say,
    ) -> None:
        lists = FeedLists(self.bounds.max_feeds, report)
        if remote.api == "nextcloud":
            await read_nextcloud_list(remote, lists)
            await self._subscribe(user, lists, report, say)
            await actions.run(remote)
            return
        ids, more_devices = await device_ids(remote, self.bounds)
        if ids:
            await read_device_lists(remote, ids, lists)
            report.devices = len(ids)
            await self._subscribe(user, lists, report, say)
            if more_devices:
                raise ImportBoundReached(self.bounds.devices_message())
            await actions.run(remote)
            return
        # No device listed: the actions name the devices whose lists (with their
        # removals) say what is subscribed; the simple list only when they name none.
        # Actions that stop half way still name devices: their lists are read, then
        # the import stops with what stopped the actions.
        stopped: Exception | None = None
        try:
            await actions.run(remote)
        except (RemoteError, LimitExceeded, ImportBoundReached) as exc:
            stopped = exc
        named = actions.devices_named()
        if named:
            await read_device_lists(remote, named, lists)
            report.devices = len(named)
        elif stopped is None:
            await read_simple_list(remote, lists)
            await read_removals(remote, lists)
        await self._subscribe(user, lists, report, say)
        if stopped is not None:
            raise stopped

    async def _subscribe_piece(
        self, user: User, piece: ImportPlan, now: int, report: RemoteImportReport
    ) -> None:
        done = await self.opml.apply(user, piece, now)
        report.feeds_added += done.added
        report.feeds_resubscribed += done.resubscribed
        report.feeds_already += done.already_subscribed
        for skipped in done.skipped:
            report.skip_feed(skipped.url, skipped.reason)

    async def _subscribe(
        self, user: User, lists: FeedLists, report: RemoteImportReport, say: Say
    ) -> None:
        report.feeds_read = len(lists.subscribed)
        report.feeds_unsubscribed_there = lists.unsubscribed()
        say(f"{report.feeds_read:,} subscriptions read")
        now = timestamps.now_us()
        feeds = [OutlineFeed(url, None) for url in lists.subscribed]
        plan: ImportPlan = await asyncio.to_thread(self.opml.plan, feeds, now)
        del feeds
        for skipped in plan.skipped:
            report.skip_feed(skipped.url, skipped.reason)
        planned = plan.subscribes
        for start in range(0, len(planned), FEED_CHUNK):
            piece = ImportPlan(subscribes=planned[start : start + FEED_CHUNK])
            # A stop (SIGTERM, Cancel) waits for the piece: what it committed is counted.
            await through(self._subscribe_piece(user, piece, now, report))
        if lists.past_bound:
            raise feeds_bound(self.bounds)
