"""The gpodder episodes endpoint (gpodder spec 5.7, 5.8, 6.6): an upload through the
one write path (`services/episodes/writes.py`), a pull by the gpodder cursor (a page
of the user's actions, optionally of one podcast or device, or aggregated). No HTTP
here.
"""

from __future__ import annotations

from typing import Any

from podsync.feeds import url_key
from podsync.services.devices import DEVICE_ID
from podsync.services.episodes.items import normalise_url
from podsync.services.episodes.pieces import ActionPieces
from podsync.services.episodes.writes import EpisodeWrites, Upload
from podsync.services.gpodder import cursor
from podsync.storage.engine import Connection, Engine
from podsync.store import episode_actions, episode_feeds
from podsync.store.episode_actions import ActionRow


class Pull:
    """A pull's answer: its actions in pieces (`pieces.first` read already, the rest
    read as they are written) and its `timestamp`, known once they are all read."""

    def __init__(self, pieces: ActionPieces, high: int, page_size: int) -> None:
        self.pieces = pieces
        self.high = high
        self.page_size = page_size

    @property
    def timestamp(self) -> int:
        # A full page ends at its last row, so the next call resumes right after it.
        full = self.pieces.count == self.page_size
        return cursor.encode(self.pieces.after if full else self.high)


class EpisodeService:
    """The gpodder episodes endpoint: uploads through the one write path, pulls by
    the gpodder cursor."""

    def __init__(self, db: Engine, page_size: int, writes: EpisodeWrites) -> None:
        self.db = db
        self.page_size = page_size
        self.writes = writes

    async def upload(self, user_id: int, items: list[Any]) -> Upload:
        return await self.writes.upload(user_id, items)

    async def pull(
        self,
        user_id: int,
        since: str | None,
        podcast: str | None,
        device_id: str | None,
        aggregated: bool,
    ) -> Pull:
        url = normalise_url(podcast) if podcast is not None else None
        podcast_key = url_key(url) if url is not None else None
        # A filter no stored action can satisfy (a podcast that is not a URL, a device
        # id no device can have: a NUL byte, say) matches nothing. It never reaches
        # the database, which may not even store such text (PostgreSQL refuses NUL).
        matches_nothing = (podcast is not None and url is None) or (
            device_id is not None and not DEVICE_ID.fullmatch(device_id)
        )
        # The range, the podcast and the first piece from one read transaction (a
        # piece is a few ms of work, on the loop; pulls.py).
        async with self.db.snapshot() as conn:
            high = await episode_actions.max_seq(conn, user_id)
            threshold = cursor.decode(since, high)
            feed = None
            if podcast_key is not None and not matches_nothing:
                feed = await episode_feeds.feed_id(conn, user_id, podcast_key)
                matches_nothing = feed is None

            async def reader(c: Connection, after: int, count: int) -> list[ActionRow]:
                return await episode_actions.page(
                    c,
                    user_id,
                    window_after=threshold,
                    after_seq=after,
                    upto_seq=high,
                    feed=feed,
                    device_id=device_id,
                    aggregated=aggregated,
                    limit=count,
                )

            pieces = ActionPieces(self.db, user_id, reader, threshold, self.page_size)
            if matches_nothing:
                pieces.done = True
            else:
                await pieces.start(conn)
        return Pull(pieces, high, self.page_size)
