"""Reading subscriptions: keyset pages, one entity, the change feed (sections 4, 5, 7).

Cursors are opaque and tamper-evident: itsdangerous-signed, bound to the user, and
naming a position (an internal id, or a change sequence number), never an offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from itsdangerous import BadData, URLSafeSerializer

from podsync import timestamps
from podsync.errors import InvalidInput, NotFound
from podsync.model import Subscription
from podsync.rules import canonical_uuid
from podsync.storage.engine import Engine
from podsync.store import meta
from podsync.store import subscriptions as store

CURSOR_SALT = "podsync.cursor"
NEXT, PREV, FEED = "n", "p", "f"


@dataclass(frozen=True, slots=True)
class Page:
    views: list[bytes]  # each entity's stored JSON (model.subscription_view)
    next_cursor: str | None
    prev_cursor: str | None


@dataclass(frozen=True, slots=True)
class Changes:
    results: list[tuple[int, bytes]]  # (last_updated, stored view) in change order
    has_next: bool
    next_since: str


# Signed and checked cursors are remembered (both are pure functions of the secret):
# a client polling the head of its feed sends the same cursor and gets it back, and
# list pages are re-read at the same positions; each HMAC saved is ~10 µs.
REMEMBERED_CURSORS = 4096


class Cursors:
    """Signs and checks cursor positions for one user."""

    def __init__(self, secret_key: str) -> None:
        self._serializer = URLSafeSerializer(secret_key, salt=CURSOR_SALT)
        self._made: dict[tuple[str, int, int], str] = {}
        self._read: dict[str, Any] = {}

    def make(self, kind: str, user_id: int, position: int) -> str:
        key = (kind, user_id, position)
        token = self._made.get(key)
        if token is None:
            token = str(self._serializer.dumps([kind, user_id, position]))
            _remember(self._made, key, token)
        return token

    def read(self, token: str, user_id: int, kinds: tuple[str, ...]) -> tuple[str, int]:
        value: Any = self._read.get(token)
        if value is None:
            try:
                value = self._serializer.loads(token)
            except (BadData, UnicodeError, ValueError):
                raise InvalidInput("since is not a cursor this server issued") from None
            _remember(self._read, token, value)
        if (
            not isinstance(value, list)
            or len(value) != 3
            or value[0] not in kinds
            or value[1] != user_id
            or type(value[2]) is not int
        ):
            raise InvalidInput("since is not a cursor for this user and this list")
        return value[0], value[2]


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> None:
    if len(memo) >= REMEMBERED_CURSORS:
        del memo[next(iter(memo))]  # the oldest entry
    memo[key] = value


class ListingService:
    def __init__(self, db: Engine, secret_key: str) -> None:
        self.db = db
        self.cursors = Cursors(secret_key)

    async def get(self, user_id: int, sync_id: str) -> Subscription:
        canonical = canonical_uuid(sync_id)
        found = None
        if canonical is not None:
            async with self.db.read() as conn:
                found = await store.get_by_sync_id(conn, user_id, canonical)
        if found is None:
            raise NotFound(f"no subscription with sync_id {sync_id!r}")
        return found

    async def page(
        self, user_id: int, since: str | None, limit: int, include_unsubscribed: bool
    ) -> Page:
        """One page in creation order, after (or, for a prev cursor, before) a position."""
        kind, position = self.cursors.read(since, user_id, (NEXT, PREV)) if since else (NEXT, 0)
        # The page and the flag for the other side come from one statement. Beyond
        # the page, the flag does not depend on its rows: the page starts at the
        # first matching entity past `position`, so "an entity before the page's
        # first" is "an entity at or before `position`" (and likewise backwards).
        forward = kind == NEXT
        async with self.db.read() as conn:
            rows, edge = await store.page_and_edge(
                conn, user_id, position, forward, include_unsubscribed, limit + 1
            )
            if edge is None:  # an empty page carries no flag: ask for it alone
                pivot = position + 1 if forward else position - 1
                edge = await store.exists_beyond(
                    conn, user_id, pivot, not forward, include_unsubscribed
                )
        if forward:
            has_next, rows, has_prev = len(rows) > limit, rows[:limit], edge
        else:
            has_prev, rows, has_next = len(rows) > limit, rows[:limit][::-1], edge
        next_cursor = prev_cursor = None
        if has_next:
            last_id = rows[-1][0] if rows else position - 1
            next_cursor = self.cursors.make(NEXT, user_id, last_id)
        if has_prev:
            first_id = rows[0][0] if rows else (position + 1 if kind == NEXT else position)
            prev_cursor = self.cursors.make(PREV, user_id, first_id)
        return Page([view for _, view in rows], next_cursor, prev_cursor)

    async def changes(
        self,
        user_id: int,
        since: str | None,
        limit: int,
        exclude_client: str | None,
    ) -> Changes:
        """Entities changed after a cursor (or at or after a time), in change order."""
        after = 0
        moment = None
        if since:
            try:
                moment = timestamps.parse(since)
            except timestamps.InvalidTimestamp:
                after = self.cursors.read(since, user_id, (FEED,))[1]
        # A poll with a cursor is one statement; a time needs a read transaction, for
        # the position it maps to must agree with the changes read after it.
        reading = self.db.read() if moment is None else self.db.snapshot()
        async with reading as conn:
            if moment is not None:
                first = await store.first_change_since(conn, user_id, moment)
                after = first - 1 if first is not None else await meta.current_change_seq(conn)
            rows, counter = await store.changes_and_counter(
                conn, user_id, after, exclude_client, limit + 1
            )
        has_next, rows = len(rows) > limit, rows[:limit]
        # Without more rows, every change up to the database's counter has been seen.
        upto = rows[-1][0] if has_next else counter
        return Changes(
            [(last_updated, view) for _, last_updated, view in rows],
            has_next,
            self.cursors.make(FEED, user_id, max(upto, after)),
        )
