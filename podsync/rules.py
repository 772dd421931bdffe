"""The sync rules (contract section 6), pure: no database, no wire format, no clock.

Every writer feeds them typed commands: the Open Podcast API (`POST /api/v1/sync`),
OPML import and the gpodder layer. `check` validates one command's values;
`Plan.apply` runs valid commands against the user's entities in memory under
strict last-write-wins; the caller (services/sync.py) loads the entities a batch
can touch, runs the plan in one transaction and saves what it changed.

Times are integer microseconds. A command's `occurred_at` of None means "stamped
by the server in arrival order": the later of the server's clock and the target's
`last_updated` plus 1 µs (gpodder.md 6.2), so a write that carries no time of its
own always wins over what came before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from podsync.feeds import (
    MAX_GUID,
    InvalidFeedUrl,
    check_feed_url,
    derive_guid,
    is_plain_url,
    new_uuid7,
    url_key,
)
from podsync.feeds import has_bad_characters as bad_text
from podsync.model import Subscription

APPLIED, IGNORED, REJECTED = "applied", "ignored", "rejected"
NOT_FOUND = "Entity not found"
LIMIT_REACHED = "subscription limit reached"
REUSED_ACTION_ID = "action_id already used for a different action"
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}", re.ASCII)


def canonical_uuid(value: object) -> str | None:
    """The lower-case 8-4-4-4-12 form of a UUID string, or None if it is not one."""
    if isinstance(value, str) and _UUID.fullmatch(value):
        return value.lower()
    return None


# Commands and outcomes are not frozen, for speed, as `model.Subscription`: a frozen
# dataclass sets each field through object.__setattr__, and a push of 30 new feeds
# makes a command, an outcome and a result for each (390 such calls, 4% of its CPU
# instructions). Nothing changes one after it is made.
@dataclass(slots=True)
class Subscribe:
    feed_url: str
    occurred_at: int | None = None
    guid: str | None = None
    sync_id: str | None = None  # as sent; an unknown one counts as absent
    title: str | None = None  # kept for OPML export; the API does not show it


@dataclass(slots=True)
class Unsubscribe:
    occurred_at: int | None = None
    sync_id: str | None = None  # as sent; when given, it alone finds the target
    feed_url: str | None = None
    guid: str | None = None


@dataclass(slots=True)
class Update:
    sync_id: str
    occurred_at: int | None = None
    feed_url: str | None = None
    guid: str | None = None


@dataclass(slots=True)
class Invalid:
    """An action that failed before it became a command (a bad field): rejected."""

    reason: str


Command = Subscribe | Unsubscribe | Update | Invalid


@dataclass(slots=True)
class Outcome:
    status: str
    reason: str | None = None
    sync_id: str | None = None  # the entity the command acted on, if any
    created: bool = False


def check(command: Command, now: int, max_skew_s: int) -> str | None:
    """Why a command cannot be applied, or None when its values are acceptable."""
    if isinstance(command, Invalid):
        return command.reason
    at = command.occurred_at
    if at is not None and at > now + max_skew_s * 1_000_000:
        return f"occurred_at is more than {max_skew_s} s in the server's future"
    feed_url = command.feed_url
    # A plain URL (nearly all of them) passes every check of check_feed_url and has
    # no control character: one regex match for it instead of three scans.
    plain = feed_url is not None and is_plain_url(feed_url)
    for field in ("sync_id", "feed_url", "guid"):
        value = getattr(command, field)
        if value is not None and not (plain and field == "feed_url") and bad_text(value):
            return f"data.{field} contains a control character"
    if feed_url is not None and not plain:
        try:
            check_feed_url(feed_url)
        except InvalidFeedUrl as exc:
            return str(exc)
    if command.guid is not None and len(command.guid) > MAX_GUID:
        return f"data.guid is longer than {MAX_GUID} characters"
    if isinstance(command, Update) and command.feed_url is None and command.guid is None:
        return "update needs data.guid or data.feed_url"
    if isinstance(command, Unsubscribe) and not (
        command.sync_id or command.feed_url or command.guid
    ):
        return "unsubscribe needs data.sync_id, data.feed_url or data.guid"
    return None


def lookup_keys(commands: Iterable[Command]) -> tuple[set[str], set[str], set[str]]:
    """The sync ids, url keys and guids whose entities a batch of valid commands can
    touch: what the caller loads before `Plan.apply`."""
    sync_ids: set[str] = set()
    url_keys: set[str] = set()
    guids: set[str] = set()
    for c in commands:
        if isinstance(c, Invalid):
            continue
        canonical = canonical_uuid(c.sync_id)
        if canonical:
            sync_ids.add(canonical)
        if c.feed_url:
            url_keys.add(url_key(c.feed_url))
            if not c.guid:
                guids.add(derive_guid(c.feed_url))
        if c.guid:
            guids.add(c.guid)
    return sync_ids, url_keys, guids


def names_other_guids(commands: Iterable[Command]) -> bool:
    """Whether a batch names a guid that none of its feed URLs derives. Only then can
    it match an entity stored with `guid_by_url` (schema step 32) other than by that
    entity's url key, and the user's marked entities are indexed before its lookups
    (`store.subscriptions.index_guids`)."""
    derived: set[str] = set()
    given: set[str] = set()
    for c in commands:
        if isinstance(c, Invalid):
            continue
        if c.feed_url:
            derived.add(derive_guid(c.feed_url))
        if c.guid:
            given.add(c.guid)
    return not given <= derived


class Plan:
    """The user's entities a batch can touch, changed in memory by its commands.

    `room` is how many more feeds the user may have subscribed, `entity_room` how
    many more entities (subscribed or not) the user may hold (None: no limit). A
    subscribe that needs either past its room is rejected; an unsubscribe gives one
    subscribed place back. `subscribed_delta` is how the batch changed the number
    of subscribed feeds."""

    def __init__(
        self,
        user_id: int,
        client_id: str | None,
        entities: Sequence[Subscription],
        now: int,
        room: int | None = None,
        entity_room: int | None = None,
        new_ids: Iterable[str] = (),
    ) -> None:
        self.user_id = user_id
        # Sync ids for the entities the batch creates, made before the write turn
        # (`new_uuid7s`); more are made here if they run out.
        self._new_ids = iter(new_ids)
        self.client_id = client_id
        self.now = now
        self.room = room
        self.entity_room = entity_room
        self.subscribed_delta = 0
        self.by_sync_id = {s.sync_id: s for s in entities}
        self.by_url_key = {s.url_key: s.sync_id for s in entities}
        self.by_guid: dict[str, list[str]] = {}
        for s in sorted(entities, key=lambda s: s.id or 0):  # oldest first for guid lookups
            self.by_guid.setdefault(s.guid, []).append(s.sync_id)
        self.original_keys = {s.sync_id: (s.url_key, s.feed_url) for s in entities}
        self.created: set[str] = set()
        self.dirty: dict[str, None] = {}  # ordered set of changed sync ids

    def apply_all(self, commands: Sequence[Command]) -> list[Outcome]:
        """Apply valid commands in `occurred_at` order (ties, and server-stamped ones:
        in array order); one outcome per command, in array order."""
        outcomes: list[Outcome | None] = [None] * len(commands)
        # A stable sort: ties stay in array order.
        times = [_time(c, self.now) for c in commands]
        order = sorted(range(len(commands)), key=times.__getitem__)
        for i in order:
            outcomes[i] = self.apply(commands[i])
        return [o for o in outcomes if o is not None]

    def apply(self, command: Command) -> Outcome:
        if isinstance(command, Subscribe):
            return self._subscribe(command)
        if isinstance(command, Unsubscribe):
            return self._unsubscribe(command)
        if isinstance(command, Update):
            return self._update(command)
        return Outcome(REJECTED, command.reason)

    def _target(
        self, sync_id: str | None, feed_url: str | None, guid: str | None, fall_back: bool
    ) -> Subscription | None:
        if sync_id is not None:
            canonical = canonical_uuid(sync_id)
            found = self.by_sync_id.get(canonical) if canonical else None
            if found is not None or not fall_back:
                return found
        if feed_url is not None:
            held_by = self.by_url_key.get(url_key(feed_url))
            if held_by is not None:
                return self.by_sync_id[held_by]
        guid = guid or (derive_guid(feed_url) if feed_url else None)
        if guid is not None and self.by_guid.get(guid):
            return self.by_sync_id[self.by_guid[guid][0]]
        return None

    def _at(self, command: Subscribe | Unsubscribe | Update, target: Subscription | None) -> int:
        if command.occurred_at is not None:
            return command.occurred_at
        if target is None:
            return self.now
        return max(self.now, target.last_updated + 1)

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

    def _change(self, old: Subscription, at: int, **fields: Any) -> Outcome:
        new = replace(old, last_updated=at, last_client_id=self.client_id, view=b"", **fields)
        self._put(new, old)
        return Outcome(APPLIED, sync_id=old.sync_id)

    def _subscribe(self, c: Subscribe) -> Outcome:
        # _target's lookups with the url key and guid made once: the new entity's too.
        key = url_key(c.feed_url)
        guid = c.guid or derive_guid(c.feed_url)
        target = None
        if c.sync_id is not None:
            canonical = canonical_uuid(c.sync_id)
            target = self.by_sync_id.get(canonical) if canonical else None
        if target is None:
            held_by = self.by_url_key.get(key)
            if held_by is not None:
                target = self.by_sync_id[held_by]
            elif (c.guid or c.feed_url) and self.by_guid.get(guid):
                target = self.by_sync_id[self.by_guid[guid][0]]
        at = self._at(c, target)
        if target is None:
            if _full(self.room) or _full(self.entity_room):
                return Outcome(REJECTED, LIMIT_REACHED)
            entity = Subscription(
                id=None,
                user_id=self.user_id,
                sync_id=next(self._new_ids, None) or new_uuid7(),
                guid=guid,
                feed_url=c.feed_url,
                url_key=key,
                title=c.title,
                subscribed_at=at,
                unsubscribed_at=None,
                last_updated=at,
                last_client_id=self.client_id,
                change_seq=0,  # assigned when the plan is saved
                changed_at=0,
            )
            self._put(entity, None)
            self.created.add(entity.sync_id)
            self._count_subscribed(1)
            if self.entity_room is not None:
                self.entity_room -= 1
            return Outcome(APPLIED, sync_id=entity.sync_id, created=True)
        if target.subscribed or at <= target.last_updated:
            return Outcome(IGNORED, sync_id=target.sync_id)
        if _full(self.room):
            return Outcome(REJECTED, LIMIT_REACHED, sync_id=target.sync_id)
        self._count_subscribed(1)
        return self._change(
            target, at, subscribed_at=at, unsubscribed_at=None, title=c.title or target.title
        )

    def _count_subscribed(self, change: int) -> None:
        self.subscribed_delta += change
        if self.room is not None:
            self.room -= change

    def _unsubscribe(self, c: Unsubscribe) -> Outcome:
        target = self._target(c.sync_id, c.feed_url, c.guid, fall_back=False)
        if target is None:
            return Outcome(REJECTED, NOT_FOUND)
        at = self._at(c, target)
        if not target.subscribed or at <= target.last_updated:
            return Outcome(IGNORED, sync_id=target.sync_id)
        self._count_subscribed(-1)
        return self._change(target, at, unsubscribed_at=at)

    def _update(self, c: Update) -> Outcome:
        target = self._target(c.sync_id, None, None, fall_back=False)
        if target is None:
            return Outcome(REJECTED, NOT_FOUND)
        at = self._at(c, target)
        if at <= target.last_updated:
            return Outcome(IGNORED, sync_id=target.sync_id)
        fields: dict[str, Any] = {}
        if c.feed_url is not None:
            key = url_key(c.feed_url)
            holder = self.by_url_key.get(key)
            if holder is not None and holder != target.sync_id:
                return Outcome(
                    REJECTED,
                    f"feed_url belongs to another subscription: {holder}",
                    sync_id=target.sync_id,
                )
            fields.update(feed_url=c.feed_url, url_key=key)
        if c.guid is not None:
            fields["guid"] = c.guid
        return self._change(target, at, **fields)

    def changes(self) -> tuple[list[Subscription], list[Subscription], list[Subscription]]:
        """What to save, in change order: (created, changed, changed with a new url key
        or feed URL)."""
        created, changed, moved = [], [], []
        for sync_id in self.dirty:
            entity = self.by_sync_id[sync_id]
            if sync_id in self.created:
                created.append(entity)
            else:
                changed.append(entity)
                if (entity.url_key, entity.feed_url) != self.original_keys[sync_id]:
                    moved.append(entity)
        return created, changed, moved


def _full(room: int | None) -> bool:
    return room is not None and room <= 0


def _time(command: Command, now: int) -> int:
    if isinstance(command, Invalid) or command.occurred_at is None:
        return now
    return command.occurred_at
