"""Schema step 29 on both engines, from a database of 0.3.0: on PostgreSQL the
guid's index leads with the guid (the sync batch's read names it alone), on SQLite
nothing changes. Every row survives, a batch's read finds the same entities by
their guids before and after the step, and a batch written after it finds them too."""

from __future__ import annotations

from typing import Any

import pytest

from podsync.config import Config
from podsync.rules import Subscribe
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine, create_engine
from podsync.storage.maintenance import check
from podsync.storage.migrations.postgres import MIGRATIONS
from podsync.store import meta
from podsync.store import sync_batch as batch_store
from tests.storage.test_subscription_indexes_migration import stored
from tests.support.migration_support import add_user, database_at

pytestmark = pytest.mark.both_engines

RELEASE_0_3_0 = 24  # the schema version 0.3.0 left
STEP = next(n for n, s in enumerate(MIGRATIONS, 1) if "(guid, user_id)" in str(s))


async def guid_index(db: Engine, engine: str) -> str:
    async with db.read() as conn:
        if engine == "sqlite":
            row = await conn.fetch_one(
                "SELECT sql FROM sqlite_master WHERE name = 'subscriptions_guid'"
            )
        else:
            row = await conn.fetch_one(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                "AND indexname = 'subscriptions_guid'"
            )
    return str(row[0])


async def found_by_guid(db: Engine, user_id: int, guids: set[str]) -> list[Any]:
    """The ids and guids of the entities a batch naming `guids` reads."""
    async with db.write(user=user_id) as conn:
        await meta.lock_user(conn, user_id, keyed_plans=True)
        loaded = await batch_store.load(conn, user_id, [], 0, (set(), set(), guids), False)
    return sorted((s.id, s.guid) for s in loaded.entities)


async def test_step_29_keeps_every_row_and_finds_every_guid(config: Config, db_engine: str) -> None:
    urls = [f"https://feeds.example/{n}.xml" for n in range(8)]
    guids = {f"guid-{n}" for n in range(8)}
    async with database_at(config, db_engine, RELEASE_0_3_0) as db:
        alice, bob = await add_user(db, "alice"), await add_user(db, "bob")
        sync = SyncService(db, config.sync)
        await sync.apply(alice, None, [Subscribe(u, guid=f"guid-{n}") for n, u in enumerate(urls)])
        await sync.apply(
            bob, None, [Subscribe(u, guid=f"guid-{n}") for n, u in enumerate(urls[:3])]
        )
        rows = await stored(db)
        before = {user: await found_by_guid(db, user, guids) for user in (alice, bob)}
    assert [len(found) for found in before.values()] == [8, 3]

    db = create_engine(config.database)
    await db.open()  # runs the steps after 0.3.0's
    try:
        assert STEP == 29
        index = await guid_index(db, db_engine)
        assert ("(guid, user_id)" if db_engine == "postgresql" else "(user_id, guid)") in index
        assert await stored(db) == rows
        assert {user: await found_by_guid(db, user, guids) for user in (alice, bob)} == before
        if db_engine == "sqlite":
            assert check(config.database.path).problems == []
        # Written after the step: a subscribe naming a known guid under another URL
        # finds alice's entity (it adds no second one), and a new guid is found.
        sync = SyncService(db, config.sync)
        await sync.apply(alice, None, [Subscribe("https://moved.example/0.xml", guid="guid-0")])
        await sync.apply(alice, None, [Subscribe("https://feeds.example/new.xml", guid="new")])
        assert len(await stored(db)) == len(rows) + 1
        found = await found_by_guid(db, alice, guids | {"new"})
        assert len(found) == 9
    finally:
        await db.close()
