"""Each person's count of episode actions (users.episode_action_count, schema step 30)
on both engines: the step counts the history already stored; every write that adds or
deletes actions keeps the count equal to what is stored (an app's upload with a repeat
and an unusable item, a web player's listening session replacing its earlier save,
the hourly pruning, an import from another server); the upload's bound refuses on
that count; `podsync db check` names a person whose count disagrees."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from podsync import timestamps
from podsync.config import Config
from podsync.errors import LimitExceeded
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.history import prune_superseded
from podsync.services.episodes.items import parse_item
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage.engine import Engine, create_engine
from podsync.storage.maintenance import check
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.store import episode_actions

STEP = next(n for n, s in enumerate(MIGRATIONS, 1) if "episode_action_count" in str(s))
START = datetime(2024, 1, 1)


def _play(n: int, episode: int = 0, position: int = 10) -> dict[str, Any]:
    return {
        "podcast": "https://show.example/feed.xml",
        "episode": f"https://show.example/{episode}.mp3",
        "action": "play",
        "timestamp": (START + timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%S"),
        "started": 0,
        "position": position + n,
        "total": 3600,
    }


async def _stored(db: Engine, user_id: int) -> tuple[int, int]:
    """(the kept count, the actions stored) of the user."""
    async with db.read() as conn:
        kept = await episode_actions.count_for_user(conn, user_id)
        row = await conn.fetch_one(
            "SELECT count(*) FROM episode_actions WHERE user_id = ?", (user_id,)
        )
    return kept, int(row[0])


@pytest.mark.both_engines
async def test_the_step_counts_the_history_stored_before_it(
    config: Config, db_engine: str, create_user: Any
) -> None:
    alice, bob, carol = [(await create_user(name)).id for name in ("alice", "bob", "carol")]
    async with create_engine(config.database) as db:
        writes = EpisodeWrites(db)
        await writes.upload(alice, [_play(n, episode=n % 7) for n in range(120)])
        await writes.upload(bob, [_play(n) for n in range(3)])
        # The database as step 29 left it: the same rows, no count (and none of the
        # later steps: step 32's column and indexes).
        async with db.write() as conn:
            await conn.execute("ALTER TABLE users DROP COLUMN episode_action_count")
            if db_engine == "sqlite":
                for statement in (
                    "DROP INDEX subscriptions_by_url",
                    "DROP INDEX subscriptions_guid",
                    "CREATE INDEX subscriptions_guid ON subscriptions(user_id, guid)",
                ):
                    await conn.execute(statement)
            await conn.execute("ALTER TABLE subscriptions DROP COLUMN guid_by_url")
            if db_engine == "postgresql":
                await conn.execute("UPDATE schema_version SET version = ?", (STEP - 1,))
    if db_engine == "sqlite":
        raw = sqlite3.connect(config.database.path)
        try:
            raw.execute(f"PRAGMA user_version = {STEP - 1}")
        finally:
            raw.close()

    async with create_engine(config.database) as db:  # runs step 30
        assert STEP == 30
        assert [await _stored(db, user) for user in (alice, bob, carol)] == [
            (120, 120),
            (3, 3),
            (0, 0),
        ]
        if db_engine == "sqlite":
            assert check(config.database.path).problems == []


@pytest.mark.both_engines
async def test_every_write_of_actions_keeps_the_count(
    config: Config, db_engine: str, create_user: Any
) -> None:
    alice, bob = (await create_user("alice")).id, (await create_user("bob")).id
    async with create_engine(config.database) as db:
        writes = EpisodeWrites(db, UploadBounds(config.gpodder))
        # An upload: 40 plays of 4 episodes, one item unusable.
        upload = await writes.upload(
            alice, [*(_play(n, episode=n % 4) for n in range(40)), {"action": "play"}]
        )
        assert (upload.stored, upload.skipped) == (40, 1)
        assert await _stored(db, alice) == (40, 40)
        # The same upload again: nothing new is stored, and nothing is counted.
        await writes.upload(alice, [_play(n, episode=n % 4) for n in range(40)])
        assert await _stored(db, alice) == (40, 40)

        # A listening session's saves: each replaces the play its save before stored.
        now = timestamps.now_us()
        for save in range(3):
            action = parse_item({**_play(100 + save, episode=9), "device": "web"}, now, {})
            await writes.record(alice, [action], now + save, session="c0ffee" * 5)
        assert await _stored(db, alice) == (41, 41)

        # An import from another server, of actions partly stored already.
        imported = [parse_item(_play(n, episode=n % 4), now, {}) for n in range(35, 50)]
        done = await writes.store_imported(alice, imported)
        assert (done.added, done.already) == (10, 5)
        assert await _stored(db, alice) == (51, 51)

        # The pruning: the superseded plays past the history's days go, the latest
        # play of each episode stays.
        removed = await prune_superseded(db, history_days=1)
        assert removed == 51 - 5
        assert await _stored(db, alice) == (5, 5)
        assert await _stored(db, bob) == (0, 0)
        if db_engine == "sqlite":
            assert check(config.database.path).problems == []


@pytest.mark.both_engines
async def test_the_bound_refuses_on_the_kept_count(
    config: Config, db_engine: str, create_user: Any
) -> None:
    alice = (await create_user("alice")).id
    async with create_engine(config.database) as db:
        bounds = UploadBounds(replace(config.gpodder, max_episode_actions_per_user=30))
        writes = EpisodeWrites(db, bounds)
        await writes.upload(alice, [_play(n, episode=n) for n in range(25)])
        with pytest.raises(LimitExceeded, match="would make 31 stored episode actions"):
            await writes.upload(alice, [_play(100 + n, episode=n) for n in range(6)])
        assert await _stored(db, alice) == (25, 25)
        # Up to the bound is taken; past a pruning, there is room again.
        await writes.upload(alice, [_play(100 + n, episode=n) for n in range(5)])
        assert await _stored(db, alice) == (30, 30)
        assert await prune_superseded(db, history_days=1) == 5
        await writes.upload(alice, [_play(200 + n, episode=n) for n in range(5)])
        assert await _stored(db, alice) == (30, 30)


async def test_db_check_names_a_person_whose_count_disagrees(
    config: Config, create_user: Any
) -> None:
    """SQLite's (`podsync db check`; PostgreSQL has pg_amcheck)."""
    alice = (await create_user("alice")).id
    async with create_engine(config.database) as db:
        await EpisodeWrites(db).upload(alice, [_play(n) for n in range(4)])
        async with db.write() as conn:
            await conn.execute("UPDATE users SET episode_action_count = 9 WHERE id = ?", (alice,))
    assert check(config.database.path).problems == [
        "user 'alice' has 9 episode actions counted and 4 stored"
    ]
