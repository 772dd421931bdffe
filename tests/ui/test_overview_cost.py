"""The Overview's Continue listening costs what a person's recent plays cost, not their
whole history: with 2,000 plays or 20,000 (none finished, so it never finds its four
finished episodes and reads as far as it may), it reads the same rows, its reads go
by index, and it still finds the episodes in progress. It read up to 5,000 plays a
request before (86 ms in a soak whose histories grew)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from podsync.config import Config
from podsync.model import User
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.listening import CONTINUE_PAGE, ListeningService
from podsync.storage.engine import create_engine
from podsync.store import listening, users

START = datetime(2026, 1, 1)


def _plays(first: int, count: int) -> list[dict[str, Any]]:
    """Plays of 20 episodes in turn, each a little further, never to the end."""
    return [
        {
            "podcast": "https://show.example/feed.xml",
            "episode": f"https://show.example/{n % 20}.mp3",
            "action": "play",
            "timestamp": (START + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%S"),
            "started": n // 20,
            "position": n // 20 + 1,
            "total": 1_000_000,
        }
        for n in range(first, first + count)
    ]


async def _user_with_plays(service: EpisodeWrites, db: Any, name: str, plays: int) -> User:
    async with db.read() as conn:
        user = await users.require_by_name(conn, name)
    for first in range(0, plays, 1000):
        upload = await service.upload(user.id, _plays(first, min(1000, plays - first)))
        assert upload.skipped == 0
    return user


async def test_continue_listening_reads_the_same_rows_for_a_long_history(
    config: Config, create_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    await create_user("short")
    await create_user("long")
    read: list[int] = []
    latest_plays = listening.latest_plays

    async def counted(*args: Any) -> list[listening.HistoryRow]:
        rows = await latest_plays(*args)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(listening, "latest_plays", counted)
    db = create_engine(config.database)
    await db.open()
    try:
        episodes = EpisodeWrites(db, UploadBounds(config.gpodder))
        short = await _user_with_plays(episodes, db, "short", 2_000)
        long = await _user_with_plays(episodes, db, "long", 20_000)
        service = ListeningService(db)
        costs = {}
        for user in (short, long):
            read.clear()
            found = await service.continue_listening(user)
            costs[user.name] = sum(read)
            # the first page of the twenty in progress
            assert len(found.in_progress) == CONTINUE_PAGE
            assert found.finished == []
            newest = {row.episode_url for row in found.in_progress}
            assert len(newest) == CONTINUE_PAGE
        assert costs["long"] == costs["short"] <= listening.RECENT_PLAYS
        # Both reads go by the index of the user's actions by time: no scan of the
        # table, no sort of what it found.
        async with db.read() as conn:
            plan = " ".join(
                str(row[3])
                for row in await conn.fetch_all(
                    "EXPLAIN QUERY PLAN SELECT occurred_at, seq FROM episode_actions "
                    "WHERE user_id = ? AND action = ? "
                    "ORDER BY occurred_at DESC, seq DESC LIMIT 1 OFFSET 999",
                    (long.id, 1),
                )
            )
        assert "episode_actions_time" in plan, plan
        assert "TEMP B-TREE" not in plan, plan
    finally:
        await db.close()
