"""An action sent twice in one upload is stored once, and an upload sent again adds
nothing, on both engines. Two actions of one episode at one moment that say different
things are both kept (AntennaPod sends a play and a download at the same time)."""

from __future__ import annotations

from typing import Any

import pytest

from podsync import timestamps
from podsync.config import Config, GpodderConfig
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.items import parse_item
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage.engine import create_engine


def item(episode: int, when: str, **fields: Any) -> dict[str, Any]:
    return {
        "podcast": "https://feeds.example/rss.xml",
        "episode": f"https://media.example/{episode}.mp3",
        "action": "play",
        "timestamp": when,
        "started": 0,
        "position": 30,
        "total": 60,
        **fields,
    }


@pytest.mark.both_engines
async def test_repeats_in_an_upload_are_stored_once(config: Config, create_user: Any) -> None:
    alice = (await create_user("alice")).id
    db = create_engine(config.database)
    await db.open()
    try:
        writes = EpisodeWrites(db, UploadBounds(GpodderConfig()))
        noon, later = "2026-03-01T12:00:00", "2026-03-01T12:05:00"
        items = [
            item(1, noon),
            item(1, noon),  # the same action again
            item(1, noon, position=45),  # the same moment, another position: kept
            item(1, noon, action="download"),  # the same moment, another kind: kept
            item(1, noon, position=45),  # again
            item(1, later),  # another moment
            item(2, noon),  # another episode at the same moment
            item(1, noon),  # the first again, after the others
        ]
        now = timestamps.now_us()
        parsed = [parse_item(i, now, {}) for i in items]
        first = await writes.store_imported(alice, parsed)
        assert (first.added, first.already) == (5, 3)
        again = await writes.store_imported(alice, [parse_item(i, now, {}) for i in items])
        assert (again.added, again.already) == (0, 8)
    finally:
        await db.close()
