"""What the web UI shows and changes for one signed-in user.

Reads are light rows from `store.browse`; every change to subscriptions goes
through `SyncService.apply` as a server-made command (the same rules, URL checks
and identity as the apps' own syncs), so a change made in a browser reaches every
app at its next sync exactly as one made by an app.
"""

from __future__ import annotations

from dataclasses import dataclass

from podsync import timestamps
from podsync.errors import InvalidInput, NotFound
from podsync.feeds import has_bad_characters, url_key
from podsync.model import User
from podsync.rules import APPLIED, IGNORED, Subscribe, Unsubscribe, canonical_uuid
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine
from podsync.store import browse, devices, episodes
from podsync.store import subscriptions as subscription_store
from podsync.store.browse import HistoryRow, SubscriptionRow
from podsync.store.devices import Device

MAX_CAPTION = 100
HISTORY_PAGE = 50


@dataclass(frozen=True, slots=True)
class Overview:
    subscribed: int
    unsubscribed: int
    devices: list[Device]
    history_count: int


@dataclass(frozen=True, slots=True)
class SubscriptionPage:
    rows: list[SubscriptionRow]
    total: int


@dataclass(frozen=True, slots=True)
class HistoryPage:
    rows: list[HistoryRow]
    older_than: int | None  # `before` of the next (older) page, if there is one
    newer_than: int | None  # `after` of the previous (newer) page, if there is one


class BrowseService:
    def __init__(self, db: Engine, sync: SyncService) -> None:
        self.db = db
        self.sync = sync

    async def overview(self, user: User) -> Overview:
        async with self.db.read() as conn:
            subscribed, unsubscribed = await browse.subscription_counts(conn, user.id)
            device_list = await devices.list_for_user(conn, user.id)
            history = await episodes.count_for_user(conn, user.id)
        return Overview(subscribed, unsubscribed, device_list, history)

    async def subscriptions(
        self, user: User, search: str, include_unsubscribed: bool, offset: int, limit: int
    ) -> SubscriptionPage:
        async with self.db.read() as conn:
            rows, total = await browse.subscriptions_page(
                conn, user.id, search or None, include_unsubscribed, offset, limit
            )
        return SubscriptionPage(rows, total)

    async def subscribe(self, user: User, feed_url: str) -> bool:
        """Subscribe to a feed by URL; True when it was new or subscribed again, False
        when the user already had it. InvalidInput names a URL the rules refuse."""
        outcome = await self.sync.apply(user.id, None, [Subscribe(feed_url)])
        [result] = outcome.results
        if result.status == APPLIED:
            return True
        if result.status == IGNORED:
            return False
        raise InvalidInput(result.reason or "the server refused this feed")

    async def set_subscribed(self, user: User, sync_id: str, subscribed: bool) -> None:
        """Unsubscribe, or subscribe again to, one of the user's subscriptions."""
        canonical = canonical_uuid(sync_id)
        async with self.db.read() as conn:
            entity = (
                await subscription_store.get_by_sync_id(conn, user.id, canonical)
                if canonical
                else None
            )
        if entity is None:
            raise NotFound("no such subscription")
        command = (
            Subscribe(entity.feed_url, sync_id=entity.sync_id)
            if subscribed
            else Unsubscribe(sync_id=entity.sync_id)
        )
        outcome = await self.sync.apply(user.id, None, [command])
        [result] = outcome.results
        if result.status not in (APPLIED, IGNORED):
            raise InvalidInput(result.reason or "the server refused this change")

    async def history(
        self,
        user: User,
        podcast_key: str | None,
        device_id: str | None,
        before: int | None,
        after: int | None,
        limit: int = HISTORY_PAGE,
    ) -> HistoryPage:
        async with self.db.read() as conn:
            # One row past the page tells whether there is more in its direction.
            rows = await browse.history_page(
                conn, user.id, podcast_key, device_id, before, after, limit + 1
            )
            backwards = after is not None
            more = len(rows) > limit
            if more:
                rows = rows[1:] if backwards else rows[:limit]
            older = newer = None
            if rows:
                if backwards:
                    newer = rows[0].seq if more else None
                else:
                    older = rows[-1].seq if more else None
                # The other direction: nothing newer than the first page.
                if backwards or before is not None:
                    pivot, newer_side = (rows[-1].seq, False) if backwards else (rows[0].seq, True)
                    if await browse.history_exists(
                        conn, user.id, podcast_key, device_id, pivot, newer=newer_side
                    ):
                        if backwards:
                            older = pivot
                        else:
                            newer = pivot
        return HistoryPage(rows, older, newer)

    async def history_filters(
        self, user: User
    ) -> tuple[list[tuple[str, str, str | None]], list[Device]]:
        """(podcasts in the history as (key, url, title), devices) for the filters."""
        async with self.db.read() as conn:
            podcasts = await browse.history_podcasts(conn, user.id)
            device_list = await devices.list_for_user(conn, user.id)
        return podcasts, device_list

    @staticmethod
    def podcast_key(feed_url: str) -> str:
        return url_key(feed_url)

    async def devices(self, user: User) -> tuple[list[Device], int]:
        """The user's devices and the subscribed count each of them syncs."""
        async with self.db.read() as conn:
            device_list = await devices.list_for_user(conn, user.id)
            subscribed = await subscription_store.count_subscribed(conn, user.id)
        return device_list, subscribed

    async def rename_device(self, user: User, device_id: str, caption: str) -> None:
        caption = caption.strip()
        if not caption:
            raise InvalidInput("a caption cannot be empty")
        if len(caption) > MAX_CAPTION or has_bad_characters(caption):
            raise InvalidInput(f"use at most {MAX_CAPTION} printable characters")
        async with self.db.write() as conn:
            if not await devices.rename(conn, user.id, device_id, caption):
                raise NotFound("no such device")

    async def remove_device(self, user: User, device_id: str) -> None:
        """Forget the device; its episode actions stay (an app that syncs under the
        same id creates it again)."""
        async with self.db.write() as conn:
            if not await devices.remove(conn, user.id, device_id):
                raise NotFound("no such device")

    @staticmethod
    def now() -> int:
        return timestamps.now_us()
