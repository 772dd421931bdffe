"""Subscription writes of a device over the OPA store (gpodder spec 5.6, 5.10, 6.1-6.5;
the Nextcloud API's subscription_change). No HTTP here.

All devices of a user share one list (one implicit sync group). Writes are OPA
subscribe/unsubscribe actions through the one set of sync rules, written by a
Client-ID derived from the device, so the OPA change feed and list show them and
last-write-wins holds across both APIs. The gpodder pull of the stream is in
`services/gpodder/subscriptions.py`.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from podsync.config import SyncConfig
from podsync.errors import InvalidInput
from podsync.feeds import has_bad_characters, url_key
from podsync.rules import Subscribe, Unsubscribe
from podsync.services.episodes.items import normalise_url
from podsync.services.subscription_limits import check_result
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine
from podsync.store import subscription_stream
from podsync.store.subscription_stream import HeldFeed

A = TypeVar("A")
R = TypeVar("R")

# Commands per write transaction of a big upload or list replace: each piece holds
# the event loop (and SQLite's one writer) for a few milliseconds, so a 20,000-feed
# replace never stalls the other users' requests.
PIECE = 100
# Entities read per query when a big write compares the list with what is held.
HELD_PAGE = 5000

# Client-IDs of gpodder devices: uuid5(this, "gpodder:{user id}:{device id}").
CLIENT_NAMESPACE = uuid.UUID("5b0e7c52-7d1b-4c4f-9a49-2f6f3c7a5a10")


# A device pushes again and again: its Client-ID (a SHA-1 and a UUID object) is kept.
@functools.lru_cache(maxsize=256)
def device_client_id(user_id: int, device_id: str) -> str:
    return str(uuid.uuid5(CLIENT_NAMESPACE, f"gpodder:{user_id}:{device_id}"))


@dataclass(frozen=True)
class Upload:
    update_urls: list[list[str]]
    before: int  # the user's highest change_seq before and after the write (spec 4.4)
    after: int


@dataclass
class _Plan:
    add: list[str]
    remove: list[str]
    rewrites: dict[str, str]


def _url_list(body: dict[str, Any], key: str) -> list[Any]:
    value = body.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput(f"{key} must be an array of URLs")
    return value


def plan_upload(body: Any) -> _Plan:
    """The adds and removes of an upload, normalised; 400 only for a malformed body or
    one exact URL in both lists. A URL that cannot be used is reported as `[url, ""]`
    and skipped: a 400 would block AntennaPod's queue forever."""
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object with add and remove arrays")
    raw_add, raw_remove = _url_list(body, "add"), _url_list(body, "remove")
    both = {u for u in raw_add if isinstance(u, str)} & {
        u for u in raw_remove if isinstance(u, str)
    }
    if both:
        raise InvalidInput(f"the same URL is in add and remove: {sorted(both)[0][:200]}")
    rewrites: dict[str, str] = {}

    def clean(values: list[Any]) -> list[str]:
        kept: dict[str, None] = {}
        for raw in values:
            if not isinstance(raw, str):
                continue
            url = normalise_url(raw)
            if url != raw and not has_bad_characters(raw):
                rewrites[raw] = url or ""
            if url is not None:
                kept[url] = None
        return list(kept)

    add = clean(raw_add)
    remove = clean(raw_remove)
    if remove and add:
        # Two spellings of one feed in add and remove: the add wins (as in mygpo).
        added_keys = {url_key(u) for u in add}
        remove = [u for u in remove if url_key(u) not in added_keys]
    return _Plan(add, remove, rewrites)


def _replace_plan(config: SyncConfig, held: Sequence[HeldFeed], urls: Sequence[str]) -> _Plan:
    """The difference between the list `urls` and the held entities: the URLs not
    subscribed yet and the subscribed feeds not in the list; LimitExceeded when the
    result would pass a limit."""
    plan = plan_upload({"add": list(urls)})
    wanted = {url_key(u) for u in plan.add}
    subscribed = {h.url_key for h in held if h.subscribed}
    plan.add = [u for u in plan.add if url_key(u) not in subscribed]
    plan.remove = [h.feed_url for h in held if h.subscribed and h.url_key not in wanted]
    check_result(config, held, plan.add, plan.remove)
    return plan


def _size(body: Any) -> int:
    if not isinstance(body, dict):
        return 0
    return sum(len(v) for v in (body.get("add"), body.get("remove")) if isinstance(v, list))


async def _off_loop_if_big(fn: Callable[[A], R], arg: A, size: int) -> R:
    """`fn(arg)` on a worker thread when `size` (URLs to check) is past one piece:
    normalising 20,000 URLs is half a second of Python; the thread gives the event
    loop its turn every few milliseconds (the interpreter's switch interval)."""
    if size <= PIECE:
        return fn(arg)
    return await asyncio.to_thread(fn, arg)


class DeviceSubscriptions:
    """Subscription writes of a device (the gpodder and Nextcloud APIs)."""

    def __init__(self, db: Engine, sync: SyncService) -> None:
        self.db = db
        self.sync = sync

    async def upload(self, user_id: int, device_id: str, body: Any) -> Upload:
        """A subscriptions POST: refused whole (400) when its result would pass a limit."""
        plan = await _off_loop_if_big(plan_upload, body, _size(body))
        if len(plan.add) + len(plan.remove) <= PIECE:
            return await self._write(user_id, device_id, plan)
        held = await self._held(user_id)
        await asyncio.to_thread(check_result, self.sync.config, held, plan.add, plan.remove)
        return await self._write(user_id, device_id, plan)

    async def replace(self, user_id: int, device_id: str, urls: Sequence[str]) -> None:
        """The simple API's PUT: the list becomes exactly `urls` (mygpo's semantics),
        through unsubscribes and subscribes so the change feed and LWW stay true. Only
        the difference is written: the feeds to unsubscribe and the ones to add, found
        with sets (O(n)); refused whole (400) when the result would pass a limit."""
        held = await self._held(user_id)
        difference = functools.partial(_replace_plan, self.sync.config, held)
        plan = await _off_loop_if_big(difference, urls, len(urls) + len(held))
        await self._write(user_id, device_id, plan)

    async def _held(self, user_id: int) -> list[HeldFeed]:
        """Every entity of the user (up to sync.max_entities_per_user), read in pages
        off the event loop."""
        held: list[HeldFeed] = []
        async with self.db.snapshot(threaded=True) as conn:
            while True:
                after = held[-1].id if held else 0
                page = await subscription_stream.held_after(conn, user_id, after, HELD_PAGE)
                held += page
                if len(page) < HELD_PAGE:
                    return held

    async def _write(self, user_id: int, device_id: str, plan: _Plan) -> Upload:
        """Unsubscribes first, then subscribes, in transactions of at most PIECE
        commands, each refused whole if it would pass a limit (a write of one piece,
        the common case, is checked there and only there)."""
        # Many removals: their old-URL lookups (one query per 500) off the loop.
        async with self.db.read(threaded=len(plan.remove) > PIECE) as conn:
            aliases = await subscription_stream.alias_targets(conn, user_id, plan.remove)
        urls = [*plan.remove, *plan.add]
        client_id = device_client_id(user_id, device_id)
        update_urls = dict(plan.rewrites)
        before = after = None
        chained = True
        for start in range(0, max(len(urls), 1), PIECE):
            # No occurred_at: the rules stamp each command max(server now, the entity's
            # last change + 1 us), so a gpodder write wins by arrival (gpodder spec 6.2).
            piece: list[Subscribe | Unsubscribe] = [
                Unsubscribe(feed_url=u, sync_id=aliases.get(u))
                if i < len(plan.remove)
                else Subscribe(feed_url=u)
                for i, u in enumerate(urls[start : start + PIECE], start)
            ]
            outcome = await self.sync.apply(user_id, client_id, piece, strict=True)
            for command, result in zip(piece, outcome.results, strict=True):
                stored = result.entity.feed_url if result.entity is not None else None
                # An add matched under another spelling: steer gPodder to the stored one.
                if isinstance(command, Subscribe) and stored and stored != command.feed_url:
                    update_urls[command.feed_url] = stored
            chained = chained and (after is None or outcome.user_seq_before == after)
            before = outcome.user_seq_before if before is None else before
            after = outcome.user_seq_after
        assert before is not None and after is not None
        # Another writer of this user between two pieces: answer as if it wrote before
        # this upload, so the client pulls its change (post_cursor).
        return Upload(
            update_urls=[[old, new] for old, new in update_urls.items()],
            before=before if chained else after,
            after=after,
        )

    async def current(self, user_id: int) -> list[tuple[str, str | None]]:
        """Every subscribed feed with its title: up to sync.max_subscriptions_per_user
        rows, read on a worker thread (on the event loop, 20,000 held it for ~0.2 s)."""
        async with self.db.read(threaded=True) as conn:
            return await subscription_stream.subscribed_titles(conn, user_id)
