"""One rule says which episode action a later one supersedes (a later action of the
same user, episode and kind: a later client time, or the same time and a higher
seq), for both the aggregated pull and the hourly pruning, on both engines. The
pruning's copy had lost "of the same user": an action of another account naming the
same episode row superseded alice's there, never in her aggregated pull, so the
pruning deleted what her pull answered."""

from __future__ import annotations

from typing import Any

import pytest

from podsync.config import Config
from podsync.services.episodes.history import prune_superseded
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.gpodder.episodes import EpisodeService
from podsync.storage.engine import create_engine

pytestmark = pytest.mark.both_engines

SHOW = "https://show.example/feed.xml"
EPISODE = "https://cdn.show.example/1.mp3"
LONG_AFTER = 4_102_444_800_000_000  # 2100-01-01: every action is past its history


def play(position: int, timestamp: str) -> dict[str, Any]:
    return {"podcast": SHOW, "episode": EPISODE, "action": "play", "timestamp": timestamp,
            "started": 0, "position": position, "total": 600}  # fmt: skip


async def test_the_pull_and_the_pruning_keep_the_same_latest_action(
    config: Config, create_user: Any
) -> None:
    alice = (await create_user("alice")).id
    db = create_engine(config.database)
    await db.open()
    try:
        writes = EpisodeWrites(db)
        # Two at the same client time: the one received later (higher seq) wins.
        await writes.upload(alice, [play(10, "2020-01-01T00:00:00")])
        await writes.upload(alice, [play(20, "2020-01-01T00:00:00")])
        await writes.upload(alice, [play(5, "2019-01-01T00:00:00")])  # older: superseded
        pull = await EpisodeService(db, 100, writes).pull(alice, "0", None, None, True)
        assert b'"position":20' in pull.pieces.first and pull.pieces.count == 1
        assert await prune_superseded(db, 365, now=LONG_AFTER) == 2
        after = await EpisodeService(db, 100, writes).pull(alice, "0", None, None, False)
        assert after.pieces.first == pull.pieces.first  # the pruning kept what it answered
    finally:
        await db.close()


async def test_another_accounts_action_never_supersedes_alices(
    config: Config, create_user: Any
) -> None:
    alice = (await create_user("alice")).id
    bob = (await create_user("bob")).id
    db = create_engine(config.database)
    await db.open()
    try:
        writes = EpisodeWrites(db)
        await writes.upload(alice, [play(10, "2020-01-01T00:00:00")])
        # A row of bob's naming alice's episode row, later: no upload makes one (an
        # episode row is its user's), but the rule must not rest on that.
        async with db.write() as conn:
            row = await conn.fetch_one("SELECT episode_id, action FROM episode_actions")
            await conn.execute(
                "INSERT INTO episode_actions (user_id, seq, episode_id, action, occurred_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (bob, 1, row[0], row[1], 1_700_000_000_000_000),
            )
        pull = await EpisodeService(db, 100, writes).pull(alice, "0", None, None, True)
        assert pull.pieces.count == 1  # her pull answers her action
        assert await prune_superseded(db, 365, now=LONG_AFTER) == 0  # and the pruning keeps it
    finally:
        await db.close()
