"""The gpodder `since`/`timestamp` cursor (gpodder spec 4.2-4.4).

A high-water mark H (a change_seq, or an episode action's seq) travels as the odd
number 2*H + 1, and `since` decodes to T = (since - 1) // 2. A cursor sent back as is
(AntennaPod, gPodder) and one sent back plus 1 (Kasts) decode to the same T, so every
client sees every change exactly once. Cursors stay below 2**31 while H < ~1.07e9.
"""

from __future__ import annotations

from podsync.errors import InvalidInput
from podsync.numbers import parse_int
from podsync.services.served import ServedPositions

FULL_STATE = -1  # the threshold of "send everything"
STREAMS = ("subscriptions", "episodes")


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


def session_key(session_id: str, stream: str) -> str:
    """Where a session's served cursor of `stream` is kept (store/served_positions)."""
    return f"s:{session_id}:{stream}"


def device_key(device_id: str, stream: str) -> str:
    """Where a device's served cursor of `stream` is kept."""
    return f"d:{device_id}:{stream}"


class ServedCursors:
    """The cursor last served to each reader of a stream, so that a POST can answer
    it instead of a later one when another device wrote in between (spec 4.4). Keys:
    the session (`session_key`) and the device (`device_key`), the most specific
    first. In the database (`services/served.py`): a POST answered by one worker or
    process finds what another served. A forgotten position only costs the fallback
    (the maximum after the write, mygpo's answer)."""

    def __init__(self, positions: ServedPositions) -> None:
        self.positions = positions

    async def served(self, user_id: int, keys: list[str], cursor: int) -> None:
        """A GET served `cursor`: stored before its answer leaves."""
        await self.positions.store(user_id, dict.fromkeys(keys, cursor))

    def answered(self, user_id: int, keys: list[str], cursor: int) -> None:
        """A POST answered `cursor`: the client's cursor from now on. Stored soon: a
        POST that does not see it yet answers the cursor served before, which can only
        send the client its own change back (spec 4.6)."""
        self.positions.store_later(user_id, dict.fromkeys(keys, cursor))

    async def recall(self, user_id: int, keys: list[str]) -> int | None:
        """The first remembered cursor among `keys` (the most specific first)."""
        found = await self.positions.read(user_id, keys)
        for key in keys:
            if key in found:
                return found[key][0]
        return None

    async def forget_session(self, user_id: int, session_id: str) -> None:
        await self.positions.forget(user_id, [session_key(session_id, s) for s in STREAMS])


def post_cursor(served: int | None, before: int, after: int) -> int:
    """A POST's `timestamp`: the served cursor when someone else wrote since it was
    served (so the client does not skip that write), else the maximum after the
    write. Never 0 or 1 as far as possible: 0 means "first sync" to AntennaPod."""
    if served is not None and before > (served - 1) // 2:
        return served
    return encode(after)
