"""The gpodder `since`/`timestamp` cursor (gpodder spec 4.2-4.4).

A high-water mark H (a change_seq, or an episode action's seq) travels as the odd
number 2*H + 1, and `since` decodes to T = (since - 1) // 2. A cursor sent back as is
(AntennaPod, gPodder) and one sent back plus 1 (Kasts) decode to the same T, so every
client sees every change exactly once. Cursors stay below 2**31 while H < ~1.07e9.
"""

from __future__ import annotations

from collections import OrderedDict

from podsync.errors import InvalidInput
from podsync.numbers import parse_int

FULL_STATE = -1  # the threshold of "send everything"
MAX_REMEMBERED = 20_000


def encode(high_water: int) -> int:
    return 2 * high_water + 1


def decode(since: str | None, user_max: int) -> int:
    """The threshold T of a `since` parameter: rows with seq > T are due. Absent, 0, or
    a cursor beyond what this user has (another server's, or an older backup's) means
    full state (FULL_STATE). Not a non-negative 64-bit integer in ASCII digits: 400,
    never a silent resend."""
    if since is None or since == "":
        return FULL_STATE
    value = parse_int(since)
    if value is None:
        raise InvalidInput(f"since must be a non-negative integer, not {since[:40]!r}")
    threshold = (value - 1) // 2
    if threshold < 0 or threshold > user_max:
        return FULL_STATE
    return threshold


class ServedCursors:
    """The cursor last served to each reader of a stream, so that a POST can answer
    it instead of a later one when another device wrote in between (spec 4.4).
    Keys: ("session", id, stream) and ("device", user id, device, stream). Bounded;
    a forgotten entry only costs the fallback (the maximum after the write)."""

    def __init__(self, capacity: int = MAX_REMEMBERED) -> None:
        self.capacity = capacity
        self._served: OrderedDict[tuple[object, ...], int] = OrderedDict()

    def remember(self, keys: list[tuple[object, ...]], cursor: int) -> None:
        for key in keys:
            self._served[key] = cursor
            self._served.move_to_end(key)
        while len(self._served) > self.capacity:
            self._served.popitem(last=False)

    def recall(self, keys: list[tuple[object, ...]]) -> int | None:
        """The first remembered cursor among `keys` (the most specific first)."""
        for key in keys:
            if key in self._served:
                return self._served[key]
        return None

    def forget_session(self, session_id: str) -> None:
        for key in [k for k in self._served if k[0] == "session" and k[1] == session_id]:
            del self._served[key]


def post_cursor(served: int | None, before: int, after: int) -> int:
    """A POST's `timestamp`: the served cursor when someone else wrote since it was
    served (so the client does not skip that write), else the maximum after the
    write. Never 0 or 1 as far as possible: 0 means "first sync" to AntennaPod."""
    if served is not None and before > (served - 1) // 2:
        return served
    return encode(after)
