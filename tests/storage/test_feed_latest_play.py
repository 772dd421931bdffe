"""A podcast's latest action time (what "Recently played" sorts by) moves with every
upload that has a later action of it, never back, on both engines: for an upload that
names more podcasts than one statement takes (a long history), each chunk of them."""

from __future__ import annotations

from typing import Any

import pytest

from podsync.config import Config, GpodderConfig
from podsync.feeds import url_key
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage.engine import create_engine
from podsync.store import episode_feeds

PODCASTS = 2 * episode_feeds.KEYS + 7  # three statements, the last one padded


def podcast(n: int) -> str:
    return f"https://feeds.example/{n}/rss.xml"


def plays(podcasts: range, hour: int, episode: str) -> list[dict[str, Any]]:
    return [
        {
            "podcast": podcast(n),
            "episode": f"https://media.example/{n}/{episode}.mp3",
            "action": "play",
            "timestamp": f"2026-03-01T{hour:02d}:{n % 60:02d}:00",
            "started": 0,
            "position": 30,
            "total": 60,
        }
        for n in podcasts
    ]


def at(hour: int, n: int) -> int:
    return (1_772_323_200 + hour * 3600 + (n % 60) * 60) * 1_000_000  # 2026-03-01


async def _feeds_at(db: Any, user: int, hour: int) -> dict[str, episode_feeds.Feed]:
    """The user's feed rows as a worker saw them when their latest play was at `hour`."""
    async with db.read() as conn:
        feeds = await episode_feeds.by_keys(
            conn, user, {url_key(podcast(n)) for n in range(PODCASTS)}
        )
    return {key: feed._replace(last_at=at(hour, 0)) for key, feed in feeds.items()}


@pytest.mark.both_engines
async def test_each_podcasts_latest_play_moves_forward_only(
    config: Config, create_user: Any
) -> None:
    alice = (await create_user("alice")).id
    db = create_engine(config.database)
    await db.open()
    try:
        writes = EpisodeWrites(db, UploadBounds(GpodderConfig()))

        async def latest() -> dict[int, int]:
            async with db.read() as conn:
                keys = {url_key(podcast(n)): n for n in range(PODCASTS)}
                feeds = await episode_feeds.by_keys(conn, alice, keys)
            return {keys[key]: feed.last_at for key, feed in feeds.items()}

        everyone = range(PODCASTS)
        assert (await writes.upload(alice, plays(everyone, 8, "a"))).stored == PODCASTS
        assert await latest() == {n: at(8, n) for n in everyone}
        # Later plays of every podcast: each of the three chunks moves.
        await writes.upload(alice, plays(everyone, 10, "b"))
        assert await latest() == {n: at(10, n) for n in everyone}
        # Earlier plays of the first half, later ones of the rest: only the rest moves.
        half = PODCASTS // 2
        older = plays(range(half), 9, "c") + plays(range(half, PODCASTS), 12, "c")
        assert (await writes.upload(alice, older)).stored == PODCASTS
        assert await latest() == {n: at(10 if n < half else 12, n) for n in everyone}
        # Another worker (its own memo of the feeds, from hour 8) uploads plays of hour
        # 11 for all: the database's time wins where it is later, the first half's 10 moves
        # and the rest's 12 stays.
        other = EpisodeWrites(db, UploadBounds(GpodderConfig()))
        other.feeds.remember(alice, await _feeds_at(db, alice, 8))
        assert (await other.upload(alice, plays(everyone, 11, "d"))).stored == PODCASTS
        assert await latest() == {n: at(11 if n < half else 12, n) for n in everyone}
    finally:
        await db.close()
