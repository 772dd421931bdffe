"""What the web UI shows and changes for one signed-in user.

Reads are light rows from `store.browse`; every change to subscriptions goes
through `SyncService.apply` as a server-made command (the same rules, URL checks
and identity as the apps' own syncs), so a change made in a browser reaches every
app at its next sync exactly as one made by an app.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from podsync import timestamps
from podsync.errors import InvalidInput, NotFound
from podsync.feeds import InvalidFeedUrl, check_feed_url, has_bad_characters, url_key
from podsync.model import Subscription, User
from podsync.rules import APPLIED, IGNORED, Subscribe, Unsubscribe, canonical_uuid
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine
from podsync.store import browse, devices, episode_actions, sync_health
from podsync.store import subscriptions as subscription_store
from podsync.store.browse import SubscriptionRow
from podsync.store.devices import Device
from podsync.store.feed_checks import NOT_A_FEED, UNREACHABLE

if TYPE_CHECKING:  # the fetcher's libraries load only when it is switched on
    from podsync.services.feeds.checks import FeedChecks, Verdict
    from podsync.services.feeds.fetcher import FeedFetcher

MAX_CAPTION = 100


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
class Subscribed:
    """A subscribe by URL that went through: `new` (False when the user already had
    it), the URL subscribed, and why the feed could not be fetched when it could not
    (then the fetcher tries again later), else None."""

    new: bool
    feed_url: str
    unreachable: str | None = None
    sync_id: str | None = None  # the subscription's (its podcast page)


# What an address typed without a scheme starts with: a host name with a dot (or an
# IPv4 address), a port perhaps, then a path, a query or nothing.
_BARE_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9-]{1,63}(?::[0-9]{1,5})?(?:[/?#]|$)"
)


def with_scheme(url: str) -> str:
    """`feeds.example.com/show` as a person types it: https:// in front. Anything
    else stays as it is, for the URL rules to judge."""
    if _BARE_HOST.match(url):
        return "https://" + url
    return url


# The URL rules' reasons (podsync.feeds) as a person reads them.
_PLAIN = {
    "feed_url must be an absolute http or https URL": (
        "not a web address: a feed's address starts with http:// or https://"
    ),
    "feed_url has no host": "the address names no server",
    "feed_url contains white space": "the address contains a space",
    "feed_url contains a control character": "the address contains a control character",
}


def plain_reason(reason: str) -> str:
    """A rules reason ("feed_url must be ...") as a sentence for a person."""
    text = _PLAIN.get(reason, reason)
    if text.startswith("feed_url"):
        text = "the address" + text[len("feed_url") :]
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


class BrowseService:
    def __init__(self, db: Engine, sync: SyncService, fetcher: FeedFetcher | None) -> None:
        self.db = db
        self.sync = sync
        # With [feeds] fetch_metadata = false: None, and nothing here fetches.
        self.fetcher = fetcher
        self.checks: FeedChecks | None = None
        if fetcher is not None:
            from podsync.services.feeds.checks import FeedChecks

            self.checks = FeedChecks(db, fetcher)

    async def overview(self, user: User) -> Overview:
        # On a worker thread: the subscription counts read the person's entries of
        # an index (all of them for a long list). The history's count is the one
        # kept on the person's row, one row read however long the history.
        async with self.db.read(threaded=True) as conn:
            subscribed, unsubscribed = await browse.subscription_counts(conn, user.id)
            device_list = await devices.list_for_user(conn, user.id)
            history = await episode_actions.count_for_user(conn, user.id)
        return Overview(subscribed, unsubscribed, device_list, history)

    async def subscriptions(
        self,
        user: User,
        search: str,
        include_unsubscribed: bool,
        offset: int,
        limit: int,
        order: str = "title",
    ) -> SubscriptionPage:
        async with self.db.read() as conn:
            rows, total = await browse.subscriptions_page(
                conn, user.id, search or None, include_unsubscribed, offset, limit, order
            )
        return SubscriptionPage(rows, total)

    async def subscribe(self, user: User, feed_url: str) -> Subscribed:
        """Subscribe to a feed by URL. An address without a scheme gets https://.
        With the fetcher on, the feed is looked at first (`FeedChecks`: a fetch, at
        most once a minute per feed and a few a minute per user): an address that
        answers with something else than a feed (a web page, an image) is refused
        before anything reaches the apps; what a fetch learned is kept, so the title
        shows at once. A feed the user is subscribed to already is not fetched.
        InvalidInput names what is wrong, in words; TooManyRequests, the bound
        reached."""
        feed_url = with_scheme(feed_url.strip())
        try:
            check_feed_url(feed_url)
        except InvalidFeedUrl as exc:
            raise InvalidInput(plain_reason(str(exc))) from None
        key = url_key(feed_url)
        verdict: Verdict | None = None
        if self.checks is not None and not await self._subscribed(user, key):
            verdict = await self.checks.check(user.id, feed_url, key, admin=user.admin)
            if verdict.answer == NOT_A_FEED:
                raise InvalidInput(f"This address is not a podcast feed: {verdict.reason}.")
        unreachable = verdict.reason if verdict and verdict.answer == UNREACHABLE else None
        if verdict is not None and verdict.fetched and self.fetcher is not None:
            # What this look found, kept as the fetcher keeps its own fetches (the
            # title at once, or the failure and when the next try is), before the
            # subscription: the fetcher's pass, finding it, then sees the feed is not
            # due, and fetches it no second time.
            if verdict.learned is not None:
                await self.fetcher.keep_checked(feed_url, key, verdict.learned, user.id)
            elif unreachable is not None:
                await self.fetcher.keep_failed(feed_url, key, unreachable)
        outcome = await self.sync.apply(user.id, None, [Subscribe(feed_url)])
        [result] = outcome.results
        if result.status not in (APPLIED, IGNORED):
            raise InvalidInput(plain_reason(result.reason or "the server refused this feed"))
        sync_id = result.entity.sync_id if result.entity is not None else None
        return Subscribed(result.status == APPLIED, feed_url, unreachable, sync_id)

    async def _subscribed(self, user: User, key: str) -> bool:
        async with self.db.read() as conn:
            found = await subscription_store.find_matching(conn, user.id, (), (key,), ())
        return any(s.unsubscribed_at is None for s in found)

    async def subscription(self, user: User, sync_id: str) -> Subscription:
        """One of the user's subscriptions (subscribed or not) by its sync id."""
        canonical = canonical_uuid(sync_id)
        async with self.db.read() as conn:
            entity = (
                await subscription_store.get_by_sync_id(conn, user.id, canonical)
                if canonical
                else None
            )
        if entity is None:
            raise NotFound("no such subscription")
        return entity

    async def refresh(self, user: User, sync_id: str) -> bool | None:
        """Fetch one of the user's feeds now: True when fetched (or tried), False when
        it was fetched a moment ago, None when the fetcher is off; TooManyRequests past
        the user's bound on fetches a minute (the Subscribe form's, shared)."""
        entity = await self.subscription(user, sync_id)
        if self.checks is None:
            return None
        return await self.checks.refresh(user.id, entity.url_key, entity.feed_url)

    async def set_subscribed(self, user: User, sync_id: str, subscribed: bool) -> None:
        """Unsubscribe, or subscribe again to, one of the user's subscriptions."""
        entity = await self.subscription(user, sync_id)
        command = (
            Subscribe(entity.feed_url, sync_id=entity.sync_id)
            if subscribed
            else Unsubscribe(sync_id=entity.sync_id)
        )
        outcome = await self.sync.apply(user.id, None, [command])
        [result] = outcome.results
        if result.status not in (APPLIED, IGNORED):
            raise InvalidInput(result.reason or "the server refused this change")

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
            await sync_health.forget(conn, user.id, sync_health.DEVICE, [device_id])

    @staticmethod
    def now() -> int:
        return timestamps.now_us()
