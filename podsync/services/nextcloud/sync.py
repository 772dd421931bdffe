"""The four calls of the Nextcloud gpoddersync API over the one account-wide store.
No HTTP here.

`since` and `timestamp` are Unix seconds of the server's clock, and the apps use
them loosely: AntennaPod stores its own clock after an upload as the next `since`,
Kasts sends the answer's `timestamp` + 1, and another process may commit a change
stamped a moment before a pull that did not see it. So a pull answers everything
changed since `since - SINCE_WINDOW_S`, and since no later than the last pull this
device was answered by any process (`Served`): a change is never missed. What
falls in the window before `since` is sent again to a client that may have it
already, which both apps apply idempotently (a subscription as its current state,
an episode action by its own timestamp against the local one); but not what the
calling device wrote itself before `since`, when it signs in with an app password
of its own (one device per app password): the app has its own changes, and Kasts
repeats an episode pull while its answer has actions. (Two apps sharing one app
password are one device: give each app its own.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from podsync.errors import InvalidInput
from podsync.feeds import url_key
from podsync.numbers import INT64_MAX, INT64_MIN, parse_int
from podsync.services.device_subscriptions import DeviceSubscriptions, device_client_id
from podsync.services.episodes.pieces import ActionPieces
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.served import ServedPositions
from podsync.storage.engine import Connection, Engine
from podsync.store import episode_actions, nextcloud_feed, subscription_stream
from podsync.store.episode_actions import ActionRow

# Seconds before `since` that a pull still answers: the second Kasts' + 1 skips, a
# change committed by another process after a pull that was stamped before it, a
# phone clock that runs up to a minute fast, and AntennaPod's upload time.
SINCE_WINDOW_S = 60
# A pull's time is stored again only when the stored one is older than this.
REFRESH_S = 60
US = 1_000_000
# The latest `since` whose microseconds a 64-bit column still holds.
MAX_SINCE_S = INT64_MAX // US
SUBSCRIPTIONS, ACTIONS = "subscriptions", "actions"


def parse_since(value: str | None) -> int:
    """`since` in seconds; absent, empty or not above 0 is 0 (everything). Anything
    but a 64-bit integer up to MAX_SINCE_S (some 292,000 years on) is a 400."""
    if value is None or value.strip() == "":
        return 0
    seconds = parse_int(value.strip(), INT64_MIN, MAX_SINCE_S)
    if seconds is None:
        raise InvalidInput(
            f"since must be an integer number of seconds up to {MAX_SINCE_S}, not {value[:40]!r}"
        )
    return max(seconds, 0)


class Served:
    """The time a pull of each (user, device, stream) was last answered: AntennaPod's
    next `since` after an upload is its own clock, later than that answer; what others
    wrote in between must still reach it. In the database (`services/served.py`), so
    that a pull answered by any worker or process counts; stored a moment late, and
    not again within REFRESH_S: an older time only widens the next pull's window."""

    def __init__(self, positions: ServedPositions) -> None:
        self.positions = positions

    async def last(self, user_id: int, device_id: str, stream: str) -> int | None:
        key = _key(device_id, stream)
        found = await self.positions.read(user_id, [key])
        return found[key][0] if key in found else None

    def remember(
        self, user_id: int, device_id: str, stream: str, timestamp: int, last: int | None
    ) -> None:
        if last is None or last < timestamp - REFRESH_S:
            self.positions.store_later(user_id, {_key(device_id, stream): timestamp})


def window(since: int, served: int | None) -> tuple[int, int]:
    """(first second a pull with `since` answers, 0 for everything; the second from
    which the caller's own changes are answered too: `since` itself, as everything the
    app wrote before it sent `since` it has)."""
    if since <= 0:
        return 0, 0
    start = since if served is None else min(since, served)
    return max(start - SINCE_WINDOW_S, 1), since


def _key(device_id: str, stream: str) -> str:
    return f"n:{device_id}:{stream}"


@dataclass(frozen=True)
class SubscriptionChanges:
    add: list[str]
    remove: list[str]
    timestamp: int


@dataclass(frozen=True)
class ActionChanges:
    pieces: ActionPieces  # `pieces.first` read already, the rest read as written
    timestamp: int


class NextcloudSync:
    def __init__(
        self,
        db: Engine,
        writes: EpisodeWrites,
        subscriptions: DeviceSubscriptions,
        positions: ServedPositions,
    ) -> None:
        self.db = db
        self.writes = writes
        self.subscriptions = subscriptions
        self.served = Served(positions)

    async def pull_subscriptions(
        self, user_id: int, device_id: str, own: bool, since: str | None
    ) -> SubscriptionChanges:
        """`own`: the device is this app's alone (an app password), so its own changes
        in the window need not be sent back."""
        last = await self.served.last(user_id, device_id, SUBSCRIPTIONS)
        cutoff, start = window(parse_since(since), last)
        client = device_client_id(user_id, device_id) if own else None
        now = int(time.time())  # before the read: a later change is in the next answer
        async with self.db.snapshot() as conn:
            if cutoff == 0:
                # Never a remove on a first sync: the apps would delete local feeds.
                add = await subscription_stream.subscribed_urls(conn, user_id)
                self.served.remember(user_id, device_id, SUBSCRIPTIONS, now, last)
                return SubscriptionChanges(add, [], now)
            changed = await nextcloud_feed.changed_since(
                conn, user_id, cutoff * US, start * US, client
            )
            moved = await nextcloud_feed.moved_since(conn, user_id, cutoff * US)
        add = [url for url, subscribed in changed if subscribed]
        current = {url_key(u) for u, _ in changed}
        remove = [url for url, subscribed in changed if not subscribed]
        remove += [u for u in dict.fromkeys(moved) if url_key(u) not in current]
        self.served.remember(user_id, device_id, SUBSCRIPTIONS, now, last)
        return SubscriptionChanges(add, remove, now)

    async def upload_subscriptions(self, user_id: int, device_id: str, body: Any) -> int:
        """Through the device writes the gpodder API uses too (the same rules, limits
        refuse whole)."""
        await self.subscriptions.upload(user_id, device_id, body)
        return int(time.time())

    async def pull_actions(
        self, user_id: int, device_id: str, own: bool, since: str | None
    ) -> ActionChanges:
        last = await self.served.last(user_id, device_id, ACTIONS)
        cutoff, start = window(parse_since(since), last)
        now = int(time.time())
        # Those received from `cutoff` on (the receipts name the first seq of each
        # second); those before `start` only when another device sent them.
        before_since: tuple[int | None, str | None] | None = None
        after = 0
        async with self.db.snapshot() as conn:  # a piece at a time (pulls.py)
            # The answer's range is fixed here: an action committed while it streams
            # comes with the next pull, whose window reaches back before its `since`.
            head = await episode_actions.max_seq(conn, user_id)
            if cutoff != 0:
                from_seq, since_seq = await episode_actions.received_bounds(
                    conn, user_id, cutoff, start
                )
                after = -1 if from_seq is None else from_seq - 1
                before_since = (since_seq, device_id if own else None)

            async def reader(c: Connection, after_seq: int, count: int) -> list[ActionRow]:
                return await episode_actions.received_page(
                    c, user_id, after_seq, head, count, before_since
                )

            pieces = ActionPieces(self.db, user_id, reader, after, None)
            if after < 0:
                pieces.done = True
            else:
                await pieces.start(conn)
        self.served.remember(user_id, device_id, ACTIONS, now, last)
        return ActionChanges(pieces, now)

    async def upload_actions(self, user_id: int, device_id: str, items: list[Any]) -> int:
        """Every action stored under `device_id` (an upload past the bound: 400)."""
        await self.writes.upload(user_id, items, device_id)
        return int(time.time())
