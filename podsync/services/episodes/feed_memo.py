"""The podcasts' rows (`episode_feeds`) that episode writes remember, so that the next
upload of the same user need not look them up (an upload names up to a thousand).

A row never goes away but with its user, so a remembered row stays right; what the
memo bounds is its size. It keeps the rows of the recent uploads only: a row is
forgotten between `KEPT_S` and twice that after the last upload that named it (two
generations: the rows named since the last turn, and those of the turn before; each
turn drops the older one). A phone that syncs every few minutes, a sync storm or an
import find their rows; a worker that served thousands of podcasts over a day keeps
those of the last hour, not all of them. Two hard bounds hold within a generation as
well: `PER_USER` rows for one user (the oldest named go first) and `IN_ALL` rows
across users (the users who wrote least recently go first), about 300 bytes a row.
"""

from __future__ import annotations

import time
from collections import ChainMap, OrderedDict
from collections.abc import Callable, Mapping

from podsync.store.episode_feeds import Feed

KEPT_S = 1800.0  # seconds a row is kept at least after the upload that named it last
PER_USER = 2000
IN_ALL = 20_000


class FeedMemo:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._turned = clock()
        # user id -> url key -> row; users least recently written first
        self._recent: OrderedDict[int, dict[str, Feed]] = OrderedDict()
        self._older: OrderedDict[int, dict[str, Feed]] = OrderedDict()
        self._rows = 0  # in both generations

    @property
    def rows(self) -> int:
        """Rows remembered, all users and both generations together."""
        return self._rows

    def users(self) -> list[dict[str, Feed]]:
        """Each user's rows in each generation (for the tests of the bounds)."""
        return [*self._recent.values(), *self._older.values()]

    def known(self, user_id: int) -> Mapping[str, Feed]:
        """The user's remembered rows by url key (read only: `remember` adds)."""
        self._turn_if_due()
        recent = self._recent.get(user_id, {})
        older = self._older.get(user_id)
        return ChainMap(recent, older) if older else recent

    def remember(self, user_id: int, feeds: Mapping[str, Feed]) -> None:
        """Rows an upload named, committed: kept as named now."""
        self._turn_if_due()
        recent = self._recent.pop(user_id, None)
        if recent is None:
            recent = {}
        self._recent[user_id] = recent  # the most recent writer last
        older = self._older.get(user_id)
        for key, feed in feeds.items():
            if older is not None and older.pop(key, None) is not None:
                self._rows -= 1
            self._rows += key not in recent
            recent.pop(key, None)
            recent[key] = feed  # the most recently named last
        while len(recent) > PER_USER:
            del recent[next(iter(recent))]
            self._rows -= 1
        if older is not None:
            while older and len(recent) + len(older) > PER_USER:
                del older[next(iter(older))]
                self._rows -= 1
        while self._rows > IN_ALL and self._forget_a_user():
            pass

    def _forget_a_user(self) -> bool:
        """Drop the rows of the user who wrote least recently, the older generation's
        first; False when only the current writer's recent rows are left."""
        generation = self._older if self._older else self._recent
        if generation is self._recent and len(self._recent) <= 1:
            return False
        _, gone = generation.popitem(last=False)
        self._rows -= len(gone)
        return True

    def _turn_if_due(self) -> None:
        now = self._clock()
        since = now - self._turned
        if since < KEPT_S:
            return
        self._turned = now
        if since >= 2 * KEPT_S:  # no turn for two periods: the recent rows are old too
            self._older = OrderedDict()
        else:
            self._older = self._recent
        self._recent = OrderedDict()
        self._rows = sum(len(rows) for rows in self._older.values())
