"""The sync rules (contract section 6): one batch of actions, one transaction.

Valid actions are applied in `occurred_at` order (ties: array order) under strict
last-write-wins; a target is found by sync_id, else url key, else guid; every
action_id is recorded so a replayed batch answers exactly as the first time.
The OPML import sends its feeds through `apply_batch` too (action_id None), so the
API and the CLI share one code path. Nothing here knows HTTP.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import aiosqlite

from podsync import timestamps
from podsync.config import SyncConfig
from podsync.db import Database
from podsync.errors import InvalidInput
from podsync.feeds import MAX_GUID, InvalidFeedUrl, check_feed_url, derive_guid, url_key
from podsync.feeds import has_bad_characters as bad_text
from podsync.store import actions as action_log
from podsync.store import meta
from podsync.store import subscriptions as store
from podsync.store.actions import RecordedAction
from podsync.store.subscriptions import Subscription

MAX_BATCH = 30
SUBSCRIPTION = "subscription"
KNOWN_ACTIONS = ("subscribe", "unsubscribe", "update")
APPLIED, IGNORED, REJECTED = "applied", "ignored", "rejected"
NOT_FOUND = "Entity not found"
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", re.ASCII)
_US_PER_DAY = 86_400_000_000


def canonical_uuid(value: object) -> str | None:
    """The lower-case 8-4-4-4-12 form of a UUID string, or None if it is not one."""
    if isinstance(value, str) and _UUID.fullmatch(value):
        return value.lower()
    return None


@dataclass(frozen=True)
class Action:
    index: int
    action_id: str | None  # None: made by the server (OPML import), not recorded
    type: str
    action: str
    occurred_at: str
    data: dict[str, Any]
    title: str | None = None


@dataclass(frozen=True)
class ActionResult:
    action: Action
    status: str
    reason: str | None
    entity: Subscription | None  # the entity's state after the whole batch
    created: bool = False


def parse_envelope(body: Any) -> list[Action]:
    """Check the request envelope; any failure is a 400 naming the index and field."""
    if not isinstance(body, dict):
        raise InvalidInput("request body must be a JSON object with a requests array")
    requests = body.get("requests")
    if not isinstance(requests, list):
        raise InvalidInput("requests must be an array of 1 to 30 actions")
    if not 1 <= len(requests) <= MAX_BATCH:
        raise InvalidInput(f"requests must hold 1 to {MAX_BATCH} actions, not {len(requests)}")
    parsed = []
    for index, item in enumerate(requests):
        where = f"requests[{index}]"
        if not isinstance(item, dict):
            raise InvalidInput(f"{where} must be an object")
        if canonical_uuid(item.get("action_id")) is None:
            raise InvalidInput(f"{where}.action_id must be a UUID")
        for field in ("type", "action", "occurred_at"):
            value = item.get(field)
            if not isinstance(value, str):
                raise InvalidInput(f"{where}.{field} must be a string")
            if bad_text(value):
                raise InvalidInput(f"{where}.{field} contains a control character")
        if not isinstance(item.get("data"), dict):
            raise InvalidInput(f"{where}.data must be an object")
        parsed.append(
            Action(
                index=index,
                action_id=item["action_id"],
                type=item["type"],
                action=item["action"],
                occurred_at=item["occurred_at"],
                data=item["data"],
            )
        )
    return parsed


class Rejected(Exception):
    """An action that cannot be applied; the message is the result's reason."""


@dataclass(frozen=True)
class _Valid:
    """An action whose fields passed the per-action checks."""

    action: Action
    occurred_at: int
    sync_id: str | None
    sync_id_given: bool
    feed_url: str | None
    guid: str | None


def _optional_string(data: dict[str, Any], field: str) -> str | None:
    value = data.get(field)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Rejected(f"data.{field} must be a string")
    if bad_text(value):
        raise Rejected(f"data.{field} contains a control character")
    return value


def _validate(action: Action, now: int, max_skew: int) -> _Valid:
    if action.type != SUBSCRIPTION:
        raise Rejected(f"unknown type {action.type!r}; this server knows {SUBSCRIPTION!r}")
    if action.action not in KNOWN_ACTIONS:
        raise Rejected(
            f"unknown action {action.action!r}; expected one of {', '.join(KNOWN_ACTIONS)}"
        )
    try:
        occurred_at = timestamps.parse(action.occurred_at)
    except timestamps.InvalidTimestamp as exc:
        raise Rejected(f"occurred_at: {exc}") from None
    if occurred_at > now + max_skew * 1_000_000:
        raise Rejected(f"occurred_at is more than {max_skew} s in the server's future")
    data = action.data
    raw_sync_id = _optional_string(data, "sync_id")
    feed_url = _optional_string(data, "feed_url")
    if feed_url is not None:
        try:
            check_feed_url(feed_url)
        except InvalidFeedUrl as exc:
            raise Rejected(str(exc)) from None
    guid = _optional_string(data, "guid")
    if guid is not None and len(guid) > MAX_GUID:
        raise Rejected(f"data.guid is longer than {MAX_GUID} characters")
    if action.action == "subscribe" and feed_url is None:
        raise Rejected("data.feed_url is required to subscribe")
    if action.action == "update":
        if raw_sync_id is None:
            raise Rejected("data.sync_id is required to update")
        if feed_url is None and guid is None:
            raise Rejected("update needs data.guid or data.feed_url")
    if action.action == "unsubscribe" and raw_sync_id is None and not (feed_url or guid):
        raise Rejected("unsubscribe needs data.sync_id, data.feed_url or data.guid")
    return _Valid(
        action=action,
        occurred_at=occurred_at,
        sync_id=canonical_uuid(raw_sync_id),
        sync_id_given=raw_sync_id is not None,
        feed_url=feed_url,
        guid=guid,
    )


@dataclass(frozen=True)
class _Outcome:
    status: str
    reason: str | None = None
    sync_id: str | None = None
    created: bool = False


class _Batch:
    """The user's entities a batch can touch, changed in memory, written once at the end."""

    def __init__(self, user_id: int, client_id: str | None, entities: list[Subscription]) -> None:
        self.user_id = user_id
        self.client_id = client_id
        self.by_sync_id = {s.sync_id: s for s in entities}
        self.by_url_key = {s.url_key: s.sync_id for s in entities}
        self.by_guid: dict[str, list[str]] = {}
        for s in entities:  # in creation order, so a guid lookup finds the oldest first
            self.by_guid.setdefault(s.guid, []).append(s.sync_id)
        self.original_keys = {s.sync_id: s.url_key for s in entities}
        self.created: set[str] = set()
        self.dirty: dict[str, None] = {}  # ordered set of changed sync ids

    def _target(self, v: _Valid, fall_back: bool) -> Subscription | None:
        if v.sync_id_given:
            found = self.by_sync_id.get(v.sync_id) if v.sync_id else None
            if found is not None or not fall_back:
                return found
        if v.feed_url is not None:
            sync_id = self.by_url_key.get(url_key(v.feed_url))
            if sync_id is not None:
                return self.by_sync_id[sync_id]
        guid = v.guid or (derive_guid(v.feed_url) if v.feed_url else None)
        if guid is not None and self.by_guid.get(guid):
            return self.by_sync_id[self.by_guid[guid][0]]
        return None

    def _put(self, new: Subscription, old: Subscription | None) -> None:
        if old is not None and old.url_key != new.url_key:
            del self.by_url_key[old.url_key]
        if old is not None and old.guid != new.guid:
            self.by_guid[old.guid].remove(old.sync_id)
        if old is None or old.guid != new.guid:
            self.by_guid.setdefault(new.guid, []).append(new.sync_id)
        self.by_url_key[new.url_key] = new.sync_id
        self.by_sync_id[new.sync_id] = new
        self.dirty[new.sync_id] = None

    def _change(self, old: Subscription, v: _Valid, **fields: Any) -> _Outcome:
        new = replace(old, last_updated=v.occurred_at, last_client_id=self.client_id, **fields)
        self._put(new, old)
        return _Outcome(APPLIED, sync_id=old.sync_id)

    def apply(self, v: _Valid) -> _Outcome:
        if v.action.action == "subscribe":
            return self._subscribe(v)
        if v.action.action == "unsubscribe":
            return self._unsubscribe(v)
        return self._update(v)

    def _subscribe(self, v: _Valid) -> _Outcome:
        assert v.feed_url is not None
        target = self._target(v, fall_back=True)  # an unknown sync_id counts as absent
        if target is None:
            entity = Subscription(
                id=None,
                user_id=self.user_id,
                sync_id=str(uuid.uuid4()),
                guid=v.guid or derive_guid(v.feed_url),
                feed_url=v.feed_url,
                url_key=url_key(v.feed_url),
                title=v.action.title,
                subscribed_at=v.occurred_at,
                unsubscribed_at=None,
                last_updated=v.occurred_at,
                last_client_id=self.client_id,
                change_seq=0,  # assigned when the batch is saved
                changed_at=0,
            )
            self._put(entity, None)
            self.created.add(entity.sync_id)
            return _Outcome(APPLIED, sync_id=entity.sync_id, created=True)
        if target.subscribed or v.occurred_at <= target.last_updated:
            return _Outcome(IGNORED, sync_id=target.sync_id)
        return self._change(
            target,
            v,
            subscribed_at=v.occurred_at,
            unsubscribed_at=None,
            title=v.action.title or target.title,
        )

    def _unsubscribe(self, v: _Valid) -> _Outcome:
        target = self._target(v, fall_back=False)
        if target is None:
            return _Outcome(REJECTED, NOT_FOUND)
        if not target.subscribed or v.occurred_at <= target.last_updated:
            return _Outcome(IGNORED, sync_id=target.sync_id)
        return self._change(target, v, unsubscribed_at=v.occurred_at)

    def _update(self, v: _Valid) -> _Outcome:
        target = self._target(v, fall_back=False)
        if target is None:
            return _Outcome(REJECTED, NOT_FOUND)
        if v.occurred_at <= target.last_updated:
            return _Outcome(IGNORED, sync_id=target.sync_id)
        fields: dict[str, Any] = {}
        if v.feed_url is not None:
            key = url_key(v.feed_url)
            holder = self.by_url_key.get(key)
            if holder is not None and holder != target.sync_id:
                return _Outcome(
                    REJECTED,
                    f"feed_url belongs to another subscription: {holder}",
                    sync_id=target.sync_id,
                )
            fields.update(feed_url=v.feed_url, url_key=key)
        if v.guid is not None:
            fields["guid"] = v.guid
        return self._change(target, v, **fields)

    async def save(self, conn: aiosqlite.Connection, now: int) -> None:
        if not self.dirty:
            return
        first_seq = await meta.next_change_seqs(conn, len(self.dirty))
        created, changed, moved = [], [], []
        for offset, sync_id in enumerate(self.dirty):
            entity = replace(
                self.by_sync_id[sync_id], change_seq=first_seq + offset, changed_at=now
            )
            self.by_sync_id[sync_id] = entity
            if sync_id in self.created:
                created.append(entity)
            else:
                changed.append(entity)
                if entity.url_key != self.original_keys[sync_id]:
                    moved.append(entity)
        await store.save(conn, created, changed, moved)


class SyncService:
    def __init__(self, db: Database, config: SyncConfig) -> None:
        self.db = db
        self.config = config

    async def apply_batch(
        self,
        user_id: int,
        actions: Sequence[Action],
        client_id: str | None,
        now: int | None = None,
    ) -> list[ActionResult]:
        """Apply a batch in one transaction; one result per action, in request order."""
        now = timestamps.now_us() if now is None else now
        keys = [canonical_uuid(a.action_id) for a in actions]
        retention = self.config.action_id_retention_days * _US_PER_DAY
        # The per-action checks need no database: run them before taking the writer,
        # so that other batches' writes are not held up by this batch's CPU work.
        checked: dict[int, _Valid | _Outcome] = {}
        for action in actions:
            try:
                checked[action.index] = _validate(action, now, self.config.max_clock_skew)
            except Rejected as exc:
                checked[action.index] = _Outcome(REJECTED, str(exc))
        async with self.db.write() as conn:
            recorded = await action_log.get_many(
                conn, user_id, [k for k in keys if k], newer_than=now - retention
            )
            first_of: dict[str, int] = {}  # action_id -> index of its first occurrence
            outcomes: dict[int, _Outcome] = {}
            valid: list[_Valid] = []
            for action, key in zip(actions, keys, strict=True):
                if key is not None:
                    if key in recorded or key in first_of:
                        continue
                    first_of[key] = action.index
                check = checked[action.index]
                if isinstance(check, _Valid):
                    valid.append(check)
                else:
                    outcomes[action.index] = check

            sync_ids = {v.sync_id for v in valid if v.sync_id}
            sync_ids.update(r.sync_id for r in recorded.values() if r.sync_id)
            url_keys = {url_key(v.feed_url) for v in valid if v.feed_url}
            guids = {v.guid for v in valid if v.guid}
            guids.update(derive_guid(v.feed_url) for v in valid if v.feed_url and not v.guid)
            entities = await store.find_matching(conn, user_id, sync_ids, url_keys, guids)

            batch = _Batch(user_id, client_id, entities)
            for v in sorted(valid, key=lambda v: (v.occurred_at, v.action.index)):
                outcomes[v.action.index] = batch.apply(v)
            await batch.save(conn, now)
            await action_log.record_many(
                conn,
                user_id,
                [
                    RecordedAction(key, o.status, o.reason, o.sync_id, now)
                    for key, index in first_of.items()
                    for o in (outcomes[index],)
                ],
            )

        results = []
        for action, key in zip(actions, keys, strict=True):
            if key is not None and key in recorded:
                rec = recorded[key]
                outcome = _Outcome(rec.status, rec.reason, rec.sync_id)
            elif key is not None and first_of[key] != action.index:
                outcome = replace(outcomes[first_of[key]], created=False)
            else:
                outcome = outcomes[action.index]
            entity = batch.by_sync_id.get(outcome.sync_id) if outcome.sync_id else None
            results.append(
                ActionResult(action, outcome.status, outcome.reason, entity, outcome.created)
            )
        return results

    async def prune_action_log(self, now: int | None = None) -> int:
        """Forget action ids older than the retention; returns how many were removed."""
        now = timestamps.now_us() if now is None else now
        cutoff = now - self.config.action_id_retention_days * _US_PER_DAY
        async with self.db.write() as conn:
            return await action_log.prune(conn, cutoff)
