"""Answers of many episode actions (the gpodder and Nextcloud pulls), read and
rendered a piece at a time, so that a whole history of 200,000 actions is written as
it is read and never held in memory.

The first piece is read before the answer starts, so that a database fault is still
answered with its error (503); the others each in a short read of their own while
the answer is written (a slow client holds no read transaction open, which would
keep SQLite's log from being checkpointed). A piece takes a few milliseconds to read
and render, on the event loop: a hop to a thread per statement cost more than the
reading (GIL hand-overs), and a few ms never keeps other requests waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import cache

from podsync import timestamps
from podsync.episode_keys import ACTION_NAMES, full_url
from podsync.model import json_string
from podsync.storage.engine import Connection, Engine
from podsync.store import episode_feeds
from podsync.store.episode_actions import ActionRow

PIECE = 1000  # actions read and rendered at a time (~250 KB of JSON)

# (connection, seq after which to read, how many) -> the next rows in seq order
Reader = Callable[[Connection, int, int], Awaitable[list[ActionRow]]]


class ActionPieces:
    """The actions of one answer, in pieces of JSON objects joined by commas."""

    def __init__(self, db: Engine, user_id: int, reader: Reader, after: int, limit: int | None):
        self.db = db
        self.user_id = user_id
        self.reader = reader
        self.after = after  # the seq of the last action read (or where reading starts)
        self.left = limit  # how many more may be read (None: all there are)
        self.count = 0  # how many were read
        self.done = False
        self.first = b""  # the first piece, read before the answer starts
        # feed id -> (its URL as a JSON string, its episodes' prefix)
        self._feeds: dict[int, tuple[str, str]] = {}

    async def read(self, conn: Connection) -> bytes:
        """The next piece, read on `conn` (b"" when there is no more)."""
        want = PIECE if self.left is None else min(PIECE, self.left)
        if self.done or want <= 0:
            self.done = True
            return b""
        rows = await self.reader(conn, self.after, want)
        missing = {r[1] for r in rows} - self._feeds.keys()  # feed ids
        if missing:
            found = await episode_feeds.by_ids(conn, self.user_id, missing)
            self._feeds.update((i, (json_string(f.url), f.prefix)) for i, f in found.items())
        if rows:
            self.after = rows[-1][0]  # seq
            self.count += len(rows)
            if self.left is not None:
                self.left -= len(rows)
        self.done = len(rows) < want or self.left == 0
        return render(rows, self._feeds).encode("ascii")

    async def start(self, conn: Connection) -> None:
        """Read the first piece on `conn` (the read that also fixed the answer's range)."""
        self.first = await self.read(conn)

    async def rest(self) -> AsyncIterator[bytes]:
        """The pieces after the first, each with the comma that joins it on."""
        written = bool(self.first)
        while not self.done:
            # The other requests' turn: reading on the loop awaits nothing that
            # suspends, and a client that takes the answer as fast as it comes never
            # makes the writer wait either.
            await asyncio.sleep(0)
            async with self.db.snapshot() as conn:
                piece = await self.read(conn)
            if piece:
                yield b"," + piece if written else piece
                written = True


# "MM:SS" of each second of an hour, and "YYYY-MM-DDTHH:" of the hours met: an
# action's time is the two joined, as timestamps.format_seconds writes it, for a
# fraction of the cost of a datetime per action. The 3,600 strings (about 0.2 MB)
# are made by the first pull, not by every server at start.
_HOURS_REMEMBERED = 4096
_hours: dict[int, str] = {}


@cache
def _minutes_seconds() -> list[str]:
    return [f"{m:02d}:{s:02d}" for m in range(60) for s in range(60)]


def _hour(hour: int) -> str:
    text = _hours.get(hour)
    if text is None:
        text = timestamps.format_seconds(hour * 3_600_000_000)[:14]
        if len(_hours) >= _HOURS_REMEMBERED:
            _hours.clear()
        _hours[hour] = text
    return text


def render(rows: list[ActionRow], feeds: dict[int, tuple[str, str]]) -> str:
    """The rows as schema step 7 wrote them (`storage/migrations/episode_views.py`),
    joined by commas (the same text, written out here a fragment at a time and joined
    once: a pull renders up to 200,000 of them)."""
    out: list[str] = []
    add = out.append
    string = json_string
    names = ACTION_NAMES
    minutes = _minutes_seconds()
    hours = _hours
    for row in rows:
        (_, feed_id, url, prefixed, episode_guid, action, occurred_at, device_id,
         started, position, total, guid, podcast_url) = row  # fmt: skip
        podcast_json, prefix = feeds[feed_id]
        if podcast_url is not None:
            podcast_json = string(podcast_url)
        seconds = occurred_at // 1_000_000
        hour = seconds // 3600
        when = (hours.get(hour) or _hour(hour)) + minutes[seconds - hour * 3600]
        add(
            f'{{"podcast":{podcast_json},"episode":{string(full_url(url, prefixed, prefix))},'
            f'"action":"{names[action]}","timestamp":"{when}"'
        )
        if guid is None:
            guid = episode_guid
        if guid:  # "" stored: the action has none
            add(f',"guid":{string(guid)}')
        if device_id is not None:
            add(f',"device":{string(device_id)}')
        if action == _PLAY and position is not None:
            if started is not None and total is not None:  # the usual play
                add(f',"started":{started},"position":{position},"total":{total}}},')
                continue
            if started is not None:
                add(f',"started":{started}')
            add(f',"position":{position}')
            if total is not None:
                add(f',"total":{total}')
        add("},")
    return "".join(out)[:-1]


_PLAY = ACTION_NAMES.index("play")
