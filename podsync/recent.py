"""A memo of what a worker made or checked lately: a value kept for a while after its
last use, not for as long as the process serves.

A memo that forgets its oldest entry only when it is full fills at the rate new keys
come and then stays full: at a few hundred new cursors or reply URLs an hour it was
still growing after three hours of a soak, and a busy day left it holding what nobody
asked for again. `Recent` keeps two generations instead: the keys made or used since
the last turn, and those of the turn before. A turn comes when the recent generation
holds `kept` keys, or `turn_s` seconds after the last one, and drops the older
generation; a key found in the older one moves to the recent one. So a key stays
between `turn_s` and twice that after its last use, a quiet worker forgets what it
no longer serves, and the memo never holds more than `2 * kept` keys.

Safe to call from several threads without a lock: a turn replaces both generations at
once, and a race at worst makes a value twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")

TURN_S = 1800.0  # seconds between turns, at most


class Recent(Generic[K, V]):
    def __init__(
        self, kept: int, turn_s: float = TURN_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.kept = kept
        self.turn_s = turn_s
        self.recent: dict[K, V] = {}
        self.older: dict[K, V] = {}
        self._clock = clock
        self._turned = clock()

    def __len__(self) -> int:
        return len(self.recent) + len(self.older)

    def __contains__(self, key: object) -> bool:
        return key in self.recent or key in self.older

    def get(self, key: K, default: D) -> V | D:
        """The value kept for `key` (moved to the recent generation when found in the
        older one), or `default`."""
        recent, older = self.recent, self.older  # a turn on another thread replaces them
        if key in recent:
            return recent[key]
        if key in older:
            value = older[key]
            self.put(key, value)
            return value
        return default

    def put(self, key: K, value: V) -> None:
        """Keep `value` for `key` in the recent generation, after a turn if one is due."""
        if key in self.recent:
            self.recent[key] = value
            return
        now = self._clock()
        if len(self.recent) >= self.kept or now - self._turned >= self.turn_s:
            self.older, self.recent, self._turned = self.recent, {}, now
        self.recent[key] = value
