"""Schema step 10 on both engines: the episode index that also refuses an action
stored before replaces the UNIQUE on (user, content hash). A database of the release
before keeps every action as it was; once migrated to the current schema, a batch
sent again still adds nothing and a seq is never given out twice, not even one of a
deleted user's actions."""

from __future__ import annotations

from typing import Any

import pytest

from podsync import timestamps
from podsync.config import Config
from podsync.errors import LimitExceeded
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.items import parse_item
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage.engine import Engine, create_engine
from podsync.storage.maintenance import check
from podsync.storage.migrations.episode_views import episode_action_view
from tests.conftest import MakeConfig
from tests.support.migration_support import add_user, database_at, old_content_hash

pytestmark = pytest.mark.both_engines

COLUMNS = (
    "seq, user_id, device_id, podcast_url, podcast_key, episode_url, guid, action, "
    "occurred_at, received_at, started, position, total, content_hash, view"
)


def batch(user: str, count: int) -> list[dict[str, Any]]:
    return [
        {
            "podcast": f"https://{user}.example/feed.xml",
            "episode": f"https://{user}.example/{n}.mp3",
            "action": "play" if n % 2 else "download",
            "timestamp": f"2026-01-01T00:00:{n % 60:02d}",
            "position": n,
            "started": 0,
            "total": 3600,
            "device": "phone" if n % 3 else None,
        }
        for n in range(count)
    ]


async def store_as_before(db: Engine, user_id: int, items: list[dict[str, Any]]) -> None:
    """What the release before step 10 wrote: the same rows, its own conflict clause."""
    rows = []
    for item in items:
        a = parse_item(item, timestamps.now_us(), {})
        view = episode_action_view(
            a.podcast_url, a.episode_url, a.action, a.occurred_at, a.device_id, a.guid,
            a.started, a.position, a.total,
        )  # fmt: skip
        rows.append(
            (user_id, a.podcast_url, a.podcast_key, a.episode_url, a.action, a.occurred_at,
             a.device_id, a.guid, a.started, a.position, a.total, old_content_hash(a), view)
        )  # fmt: skip
    async with db.write() as conn:
        await conn.execute_many(
            "INSERT INTO episode_actions (user_id, podcast_url, podcast_key, episode_url, "
            "action, occurred_at, device_id, guid, started, position, total, received_at, "
            "content_hash, view) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
            rows,
        )


async def everything(db: Engine) -> list[tuple[Any, ...]]:
    async with db.read() as conn:
        rows = await conn.fetch_all(
            f"SELECT {COLUMNS} FROM episode_actions ORDER BY seq"  # noqa: S608 - constant
        )
    return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows]


async def unique_keys(db: Engine, engine: str) -> list[str]:
    """Each unique index of episode_actions, as its columns joined by commas."""
    keys = []
    async with db.read() as conn:
        if engine == "sqlite":
            for index in await conn.fetch_all("PRAGMA index_list('episode_actions')"):
                if index[2]:  # unique
                    columns = await conn.fetch_all(f"PRAGMA index_info('{index[1]}')")
                    keys.append(",".join(c[2] for c in columns))
        else:
            for row in await conn.fetch_all(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                "AND tablename = 'episode_actions' "
                "AND indexdef LIKE 'CREATE UNIQUE%' AND indexname <> 'episode_actions_pkey'"
            ):
                keys.append(str(row[0]).partition("(")[2].rstrip(")").replace(" ", ""))
    return sorted(keys)


async def test_step_10_keeps_every_action_and_still_refuses_one_sent_again(
    config: Config, db_engine: str
) -> None:
    async with database_at(config, db_engine, 9) as db:
        alice, bob = await add_user(db, "alice"), await add_user(db, "bob")
        assert await unique_keys(db, db_engine) == ["user_id,content_hash"]
        await store_as_before(db, alice, batch("alice", 40))
        await store_as_before(db, bob, batch("bob", 25))  # the highest seqs
        async with db.write() as conn:
            await conn.execute("DELETE FROM users WHERE id = ?", (bob,))
        before = await everything(db)
    highest_given = max(row[0] for row in before) + 25
    assert len(before) == 40
    async with database_at(config, db_engine, 10) as db:  # the step itself
        assert await everything(db) == before
        assert await unique_keys(db, db_engine) == ["user_id,episode_url,action,content_hash"]

    db = create_engine(config.database)
    await db.open()  # migrates to the current version
    try:
        service = EpisodeWrites(db, UploadBounds(config.gpodder))
        # First, before anything else could move the counter: the deleted user's
        # seqs stay given out.
        new = await service.upload(alice, batch("alice", 41)[40:])
        assert new.after == highest_given + 1
        again = await service.upload(alice, batch("alice", 41))
        assert again.stored == 41 and again.after == again.before  # nothing added
        assert await stored(db) == 41
    finally:
        await db.close()
    if db_engine == "sqlite":
        assert check(config.database.path).problems == []


async def stored(db: Engine) -> int:
    async with db.read() as conn:
        return int((await conn.fetch_one("SELECT count(*) FROM episode_actions"))[0])


async def test_the_limit_counts_an_action_sent_again_as_nothing_new(
    make_config: MakeConfig,
) -> None:
    """Near the per-user bound, the actions of a batch that are stored already are
    found through the new index (one lookup each) and do not count again."""
    config = make_config(gpodder={"max_episode_actions_per_user": 50})
    db = create_engine(config.database)
    await db.open()
    try:
        alice = await add_user(db, "alice")
        service = EpisodeWrites(db, UploadBounds(config.gpodder))
        await service.upload(alice, batch("alice", 45))
        # 45 stored, 40 of these among them: 5 new would make 50, within the bound.
        resent = await service.upload(alice, batch("alice", 50)[10:])
        assert resent.stored == 40
        assert await stored(db) == 50
        with pytest.raises(LimitExceeded, match="episode action limit reached"):
            await service.upload(alice, batch("alice", 51)[45:])  # 1 new past 50
    finally:
        await db.close()
