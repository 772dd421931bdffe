"""Login throttling per (username, client address), in memory and bounded.

After `max_failures` failed logins of one pair within `window` seconds, further
logins of that pair are refused until the oldest of those failures leaves the
window. Only failures count; refused and successful logins do not.

Pairs are keyed by a digest of the username, so memory per pair stays the same
however long the names a client sends (any string fits in a login body).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

MAX_TRACKED_PAIRS = 10_000

PairKey = tuple[bytes, str]


def _pair(username: str, address: str) -> PairKey:
    return hashlib.sha256(username.encode("utf-8", "surrogatepass")).digest(), address


class LoginThrottle:
    def __init__(
        self,
        max_failures: int,
        window: float,
        max_pairs: int = MAX_TRACKED_PAIRS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window = window
        self.max_pairs = max_pairs
        self._clock = clock
        self._failures: OrderedDict[PairKey, deque[float]] = OrderedDict()

    def _recent(self, key: PairKey, now: float) -> deque[float] | None:
        times = self._failures.get(key)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[key]
            return None
        return times

    def retry_after(self, username: str, address: str) -> int | None:
        """Seconds until this pair may try again, or None when it may try now."""
        now = self._clock()
        times = self._recent(_pair(username, address), now)
        if times is None or len(times) < self.max_failures:
            return None
        # The pair is free once enough failures have aged out of the window.
        frees_at = times[len(times) - self.max_failures] + self.window
        return max(1, math.ceil(frees_at - now))

    def record_failure(self, username: str, address: str) -> None:
        now = self._clock()
        key = _pair(username, address)
        times = self._recent(key, now)
        if times is None:
            times = deque(maxlen=self.max_failures)
            self._failures[key] = times
        times.append(now)
        self._failures.move_to_end(key)
        while len(self._failures) > self.max_pairs:
            self._failures.popitem(last=False)

    def __len__(self) -> int:
        return len(self._failures)
