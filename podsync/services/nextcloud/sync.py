"""The four calls of the Nextcloud gpoddersync API over the one account-wide store.
No HTTP here.

`since` and `timestamp` are Unix seconds of the server's clock, and the apps use
them loosely: AntennaPod stores its own clock after an upload as the next `since`,
Kasts sends the answer's `timestamp` + 1, and another process may commit a change
stamped a moment before a pull that did not see it. So a pull answers everything
changed since `since - SINCE_WINDOW_S`, and since no later than the last pull this
device was answered by this process (`Served`): a change is never missed, and a
client is sent again what it already has from the last minute, which both apps
apply idempotently (a subscription as its current state, an episode action by its
own timestamp against the local one).
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from podsync.errors import InvalidInput
from podsync.feeds import url_key
from podsync.services.gpodder import Gpodder
from podsync.storage.engine import Engine
from podsync.store import gpodder_feed, nextcloud_feed, subscriptions

# Seconds before `since` that a pull still answers: the second Kasts' + 1 skips, a
# change committed by another process after a pull that was stamped before it, a
# phone clock that runs up to a minute fast, and AntennaPod's upload time.
SINCE_WINDOW_S = 60
_SINCE = re.compile(r"-?\d{1,18}", re.ASCII)
MAX_REMEMBERED = 20_000
US = 1_000_000
SUBSCRIPTIONS, ACTIONS = "subscriptions", "actions"


def parse_since(value: str | None) -> int:
    """`since` in seconds; absent, empty or not above 0 is 0 (everything)."""
    if value is None or value.strip() == "":
        return 0
    if not _SINCE.fullmatch(value.strip()):
        raise InvalidInput(f"since must be an integer number of seconds, not {value[:40]!r}")
    return max(int(value), 0)


class Served:
    """The `timestamp` this process last answered a pull of each (user, device,
    stream): AntennaPod's next `since` after an upload is its own clock, later than
    that answer; what others wrote in between must still reach it."""

    def __init__(self, capacity: int = MAX_REMEMBERED) -> None:
        self.capacity = capacity
        self._served: OrderedDict[tuple[int, str, str], int] = OrderedDict()

    def remember(self, key: tuple[int, str, str], timestamp: int) -> None:
        self._served[key] = timestamp
        self._served.move_to_end(key)
        while len(self._served) > self.capacity:
            self._served.popitem(last=False)

    def cutoff(self, key: tuple[int, str, str], since: int) -> int:
        """The first second a pull with `since` answers; 0 means everything."""
        if since <= 0:
            return 0
        served = self._served.get(key)
        start = since if served is None else min(since, served)
        return max(start - SINCE_WINDOW_S, 1)


@dataclass(frozen=True)
class SubscriptionChanges:
    add: list[str]
    remove: list[str]
    timestamp: int


@dataclass(frozen=True)
class ActionChanges:
    views: list[bytes]
    timestamp: int


class NextcloudSync:
    def __init__(self, db: Engine, gpodder: Gpodder) -> None:
        self.db = db
        self.gpodder = gpodder
        self.served = Served()

    async def pull_subscriptions(
        self, user_id: int, device_id: str, since: str | None
    ) -> SubscriptionChanges:
        key = (user_id, device_id, SUBSCRIPTIONS)
        cutoff = self.served.cutoff(key, parse_since(since))
        now = int(time.time())  # before the read: a later change is in the next answer
        async with self.db.snapshot() as conn:
            if cutoff == 0:
                # Never a remove on a first sync: the apps would delete local feeds.
                add = await gpodder_feed.subscribed_urls(conn, user_id)
                self.served.remember(key, now)
                return SubscriptionChanges(add, [], now)
            changed = await nextcloud_feed.changed_since(conn, user_id, cutoff * US)
            moved = await nextcloud_feed.moved_since(conn, user_id, cutoff * US)
        add = [url for url, subscribed in changed if subscribed]
        current = {url_key(u) for u, _ in changed}
        remove = [url for url, subscribed in changed if not subscribed]
        remove += [u for u in dict.fromkeys(moved) if url_key(u) not in current]
        self.served.remember(key, now)
        return SubscriptionChanges(add, remove, now)

    async def upload_subscriptions(self, user_id: int, device_id: str, body: Any) -> int:
        """Through the gpodder layer's upload (the same rules, limits refuse whole)."""
        await self.gpodder.subscriptions.upload(user_id, device_id, body)
        return int(time.time())

    async def pull_actions(self, user_id: int, device_id: str, since: str | None) -> ActionChanges:
        key = (user_id, device_id, ACTIONS)
        cutoff = self.served.cutoff(key, parse_since(since))
        now = int(time.time())
        # A first sync reads the whole history (up to the action bound): off the loop.
        async with self.db.snapshot(threaded=cutoff == 0) as conn:
            if cutoff == 0:
                views = await nextcloud_feed.all_actions(conn, user_id)
            else:
                views = await nextcloud_feed.actions_since(conn, user_id, cutoff * US)
        self.served.remember(key, now)
        return ActionChanges(views, now)

    async def upload_actions(self, user_id: int, device_id: str, items: list[Any]) -> int:
        """Every action stored under `device_id` (an upload past the bound: 400)."""
        await self.gpodder.episodes.upload(user_id, items, device_id)
        return int(time.time())

    async def subscribed_count(self, user_id: int) -> int:
        async with self.db.read() as conn:
            return await subscriptions.count_subscribed(conn, user_id)
