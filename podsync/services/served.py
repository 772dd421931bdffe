"""What each reader of a stream was last served, shared by every worker and process.

The gpodder API answers a write with the cursor its reader was last served when
someone else wrote since (gpodder spec 4.4), and the Nextcloud API answers a pull
from no later than the reader's last pull: both need to know what another worker or
process served. So positions live in the database (`store/served_positions.py`),
each with the time it was written; the latest wins, and an older write never covers
a later one.

Two ways to store:
- `store`, before an answer leaves: a read that moved a gpodder reader's cursor. A
  write that another worker answers a moment later must see it. Nothing is written
  when the stored position is the same (a poll at the head writes nothing).
- `store_later`: what only makes an answer better, never makes one wrong when it is
  late or lost (a gpodder write's answer: without it, a later write answers the read
  before it and the client gets its own change back once, which gpodder spec 4.6
  allows; a Nextcloud pull's time: an older one only widens the next pull). These
  are written together, a few times a second at most, off the request's path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence

from podsync import timestamps
from podsync.storage.engine import Engine
from podsync.store import served_positions

log = logging.getLogger("podsync")

# How long `store_later` positions wait, so that many share one write.
FLUSH_S = 0.25
# Positions waiting at most; past this one write takes them at once.
MAX_WAITING = 10_000
# A read stores its position again when the stored one is this old, even unchanged:
# a reader that keeps reading keeps its position past the pruning (a day for a
# session's, gpodder.session_lifetime for a device's: services/retention.py).
REFRESH_US = 12 * 3600 * 1_000_000

Position = tuple[int, int]  # (position, written at in microseconds)


class ServedPositions:
    def __init__(self, db: Engine, flush_s: float = FLUSH_S) -> None:
        self.db = db
        self.flush_s = flush_s
        self._waiting: dict[tuple[int, str], Position] = {}
        # What a flush is writing: still read from here until its write commits.
        self._flushing: dict[tuple[int, str], Position] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._now = asyncio.Event()  # flush without waiting (at shutdown)

    async def read(self, user_id: int, keys: Sequence[str]) -> dict[str, Position]:
        """{key: (position, written at)}: the latest stored or waiting for each key."""
        async with self.db.read() as conn:
            found = await served_positions.get(conn, user_id, keys)
        for key in keys:
            for pending in (self._flushing, self._waiting):
                waiting = pending.get((user_id, key))
                if waiting is not None and (key not in found or waiting[1] > found[key][1]):
                    found[key] = waiting
        return found

    async def store(self, user_id: int, positions: Mapping[str, int]) -> None:
        """Store now (before the answer that served them leaves), unless stored already."""
        stored = await self.read(user_id, list(positions))
        now = timestamps.now_us()
        moved = {
            k: p
            for k, p in positions.items()
            if k not in stored or stored[k][0] != p or stored[k][1] < now - REFRESH_US
        }
        if moved:
            async with self.db.write() as conn:
                await served_positions.put(conn, user_id, {k: (p, now) for k, p in moved.items()})
            for key in moved:  # a later write than any waiting: those must not cover it
                self._waiting.pop((user_id, key), None)

    def store_later(self, user_id: int, positions: Mapping[str, int]) -> None:
        """Store soon, with the time of this call (see the module's docstring)."""
        now = timestamps.now_us()
        for key, position in positions.items():
            self._waiting[(user_id, key)] = (position, now)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_soon())

    async def forget(self, user_id: int, keys: Sequence[str]) -> None:
        for key in keys:
            self._waiting.pop((user_id, key), None)
            self._flushing.pop((user_id, key), None)
        async with self.db.write() as conn:
            await served_positions.forget(conn, user_id, keys)

    async def _flush_soon(self) -> None:
        if len(self._waiting) < MAX_WAITING:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._now.wait(), self.flush_s)
        await self.flush()

    async def flush(self) -> None:
        """Write what waits (one write); a failure is logged, and what waited is lost:
        only an echo or a wider window follows."""
        waiting, self._waiting = self._waiting, {}
        by_user: dict[int, dict[str, Position]] = {}
        for (user_id, key), position in waiting.items():
            by_user.setdefault(user_id, {})[key] = position
        if not by_user:
            return
        # Read from here meanwhile: a POST while the write waits for its turn finds
        # the cursor it answered, as it would have before and after.
        self._flushing.update(waiting)
        try:
            async with self.db.write() as conn:
                for user_id, positions in by_user.items():
                    await served_positions.put(conn, user_id, positions)
        except Exception as exc:
            log.warning("served positions not stored (%s); apps may get a change twice", exc)
        finally:
            for written, position in waiting.items():
                if self._flushing.get(written) == position:
                    del self._flushing[written]

    async def close(self) -> None:
        """Write what waits (at shutdown)."""
        self._now.set()
        if self._flusher is not None:
            await self._flusher
        await self.flush()
