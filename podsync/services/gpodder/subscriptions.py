"""The gpodder subscription stream over the OPA store (gpodder spec 5.5, 5.6, 5.10,
6.1-6.5). No HTTP here.

All devices of a user share one list (one implicit sync group). Writes are OPA
subscribe/unsubscribe actions through the one set of sync rules, written by a
Client-ID derived from the device, so the OPA change feed and list show them and
last-write-wins holds across both APIs. Reads are the entities changed since the
cursor, each once in its final state, plus `remove old` for URLs an OPA update
moved away from.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from podsync.errors import InvalidInput
from podsync.feeds import has_bad_characters, url_key
from podsync.rules import Subscribe, Unsubscribe
from podsync.services.gpodder import cursor
from podsync.services.gpodder.episodes import normalise_url
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine
from podsync.store import gpodder_feed, subscriptions

# Client-IDs of gpodder devices: uuid5(this, "gpodder:{user id}:{device id}").
CLIENT_NAMESPACE = uuid.UUID("5b0e7c52-7d1b-4c4f-9a49-2f6f3c7a5a10")


def device_client_id(user_id: int, device_id: str) -> str:
    return str(uuid.uuid5(CLIENT_NAMESPACE, f"gpodder:{user_id}:{device_id}"))


@dataclass(frozen=True)
class Changes:
    add: list[str]
    remove: list[str]
    timestamp: int


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
    added_keys = {url_key(u) for u in add}
    # Two spellings of one feed in add and remove: the add wins (as in mygpo).
    remove = [u for u in clean(raw_remove) if url_key(u) not in added_keys]
    return _Plan(add, remove, rewrites)


def parse_url_list(body: bytes, fmt: str) -> list[str]:
    """The list of a simple-API PUT: json (an array of strings) or txt (lines)."""
    if fmt == "txt":
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("the body is not UTF-8") from None
        return [line.strip() for line in text.splitlines() if line.strip()]
    try:
        value = json.loads(body.decode("utf-8")) if body.strip() else []
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidInput("the body must be a JSON array of URLs") from None
    if not isinstance(value, list):
        raise InvalidInput("the body must be a JSON array of URLs")
    return [u for u in value if isinstance(u, str)]


class GpodderSubscriptions:
    def __init__(self, db: Engine, sync: SyncService) -> None:
        self.db = db
        self.sync = sync

    async def pull(self, user_id: int, since: str | None) -> Changes:
        async with self.db.snapshot() as conn:
            high = await subscriptions.user_seq(conn, user_id)
            threshold = cursor.decode(since, high)
            if threshold == cursor.FULL_STATE:
                # Never tombstones on a full state: AntennaPod and Kasts would delete
                # the local feeds of a first sync.
                add = await gpodder_feed.subscribed_urls(conn, user_id)
                return Changes(add, [], cursor.encode(high))
            changed = await gpodder_feed.changed_between(conn, user_id, threshold, high)
            moved = await gpodder_feed.moved_between(conn, user_id, threshold, high)
        add = [url for url, subscribed in changed if subscribed]
        current = {url_key(u) for u, _ in changed}
        remove = [url for url, subscribed in changed if not subscribed]
        remove += [u for u in dict.fromkeys(moved) if url_key(u) not in current]
        return Changes(add, remove, cursor.encode(high))

    async def upload(self, user_id: int, device_id: str, body: Any) -> Upload:
        return await self._apply(user_id, device_id, plan_upload(body))

    async def replace(self, user_id: int, device_id: str, urls: Sequence[str]) -> None:
        """The simple API's PUT: the list becomes exactly `urls` (mygpo's semantics),
        through unsubscribes and subscribes so the change feed and LWW stay true."""
        plan = plan_upload({"add": list(urls)})
        wanted = {url_key(u) for u in plan.add}
        async with self.db.read() as conn:
            current = await gpodder_feed.subscribed_urls(conn, user_id)
        plan.remove = [u for u in current if url_key(u) not in wanted]
        await self._apply(user_id, device_id, plan)

    async def _apply(self, user_id: int, device_id: str, plan: _Plan) -> Upload:
        async with self.db.read() as conn:
            aliases = await gpodder_feed.alias_targets(conn, user_id, plan.remove)
        # No occurred_at: the rules stamp each command max(server now, the entity's
        # last change + 1 us), so a gpodder write wins by arrival (gpodder spec 6.2).
        commands: list[Subscribe | Unsubscribe] = [Subscribe(feed_url=u) for u in plan.add]
        commands += [Unsubscribe(feed_url=u, sync_id=aliases.get(u)) for u in plan.remove]
        outcome = await self.sync.apply(user_id, device_client_id(user_id, device_id), commands)
        update_urls = dict(plan.rewrites)
        for command, result in zip(commands, outcome.results, strict=True):
            stored = result.entity.feed_url if result.entity is not None else None
            # An add matched under another spelling: steer gPodder to the stored one.
            if isinstance(command, Subscribe) and stored and stored != command.feed_url:
                update_urls[command.feed_url] = stored
        return Upload(
            update_urls=[[old, new] for old, new in update_urls.items()],
            before=outcome.user_seq_before,
            after=outcome.user_seq_after,
        )

    async def current(self, user_id: int) -> list[tuple[str, str | None]]:
        async with self.db.read() as conn:
            return await gpodder_feed.subscribed_titles(conn, user_id)
