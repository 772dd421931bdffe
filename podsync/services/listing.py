"""Reading subscriptions: keyset pages, one entity, the change feed (sections 4, 5, 7).

Cursors are opaque and tamper-evident: itsdangerous-signed, bound to the user, and
naming a position (an internal id, or a change sequence number), never an offset.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, NamedTuple

from itsdangerous import BadData, URLSafeSerializer

from podsync import timestamps
from podsync.errors import InvalidInput, NotFound
from podsync.model import Subscription
from podsync.recent import Recent
from podsync.rules import canonical_uuid
from podsync.storage.engine import Engine
from podsync.store import subscriptions as store
from podsync.store import users

CURSOR_SALT = "podsync.cursor"
NEXT, PREV, FEED = "n", "p", "f"


class Page(NamedTuple):
    views: list[bytes]  # each entity's stored JSON (model.subscription_view)
    next_cursor: str | None
    prev_cursor: str | None


class Changes(NamedTuple):
    results: list[tuple[int, bytes]]  # (last_updated, stored view) in change order
    has_next: bool
    next_since: str


# Signed and checked cursors are remembered (both are pure functions of the secret):
# a client polling the head of its feed sends the same cursor and gets it back, and
# list pages are re-read at the same positions; each HMAC saved is ~10 µs. Those of
# the last half hour to hour are kept (`recent.Recent`), CURSORS_KEPT at most in
# each of two generations.
CURSORS_KEPT = 2048
_UNCHECKED: tuple[str, int, int] = ("", 0, 0)  # a token not checked yet (by identity)


class Cursors:
    """Signs and checks cursor positions for one user."""

    def __init__(self, secret_key: str) -> None:
        self._serializer = URLSafeSerializer(secret_key, salt=CURSOR_SALT)
        self._made: Recent[tuple[str, int, int], str] = Recent(CURSORS_KEPT)
        # token -> (kind, user id, position), or None for a signed value of another shape
        self._read: Recent[str, tuple[str, int, int] | None] = Recent(CURSORS_KEPT)

    def make(self, kind: str, user_id: int, position: int) -> str:
        key = (kind, user_id, position)
        token = self._made.get(key, None)
        if token is None:
            token = str(self._serializer.dumps([kind, user_id, position]))
            self._made.put(key, token)
        return token

    def checked(self, token: str) -> bool:
        """Whether `token` is a cursor whose signature was checked already (a signed
        cursor never reads as a timestamp: it has no date in it)."""
        return token in self._read

    def read(self, token: str, user_id: int, kinds: tuple[str, ...]) -> tuple[str, int]:
        cursor = self._read.get(token, _UNCHECKED)
        if cursor is _UNCHECKED:
            cursor = self._check(token)
        if cursor is None or cursor[1] != user_id or cursor[0] not in kinds:
            raise InvalidInput("since is not a cursor for this user and this list")
        return cursor[0], cursor[2]

    def _check(self, token: str) -> tuple[str, int, int] | None:
        try:
            value: Any = self._serializer.loads(token)
        except (BadData, UnicodeError, ValueError):
            raise InvalidInput("since is not a cursor this server issued") from None
        cursor = None
        if (
            isinstance(value, list)
            and len(value) == 3
            and type(value[0]) is str
            and type(value[1]) is int
            and type(value[2]) is int
        ):
            cursor = (value[0], value[1], value[2])
        self._read.put(token, cursor)
        return cursor


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
        return Page(list(map(itemgetter(1), rows)), next_cursor, prev_cursor)

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
        if since and self.cursors.checked(since):  # a poll: no timestamp to try first
            after = self.cursors.read(since, user_id, (FEED,))[1]
        elif since:
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
                after = first - 1 if first is not None else await users.change_seq(conn, user_id)
            rows, counter = await store.changes_and_counter(
                conn, user_id, after, exclude_client, limit + 1
            )
        has_next, rows = len(rows) > limit, rows[:limit]
        # Without more rows, every change up to the user's counter has been seen.
        upto = rows[-1][0] if has_next else counter
        return Changes(
            [(last_updated, view) for _, last_updated, view in rows] if rows else [],
            has_next,
            self.cursors.make(FEED, user_id, max(upto, after)),
        )
