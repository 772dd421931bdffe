"""Schema step 11 on both engines: one unique index on (url key, user) replaces the
user's (user, url key) key and the feed fetcher's index on the url key of subscribed
rows. A database of the release before keeps every subscription; a feed is still one
entity per user (two users may share it); and the fetcher still claims exactly the
feeds someone is subscribed to."""

from __future__ import annotations

from typing import Any

import pytest

from podsync.config import Config
from podsync.rules import Subscribe, Unsubscribe
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine, create_engine
from podsync.storage.maintenance import check
from podsync.store import feed_info
from tests.support.migration_support import add_user, database_at, subscribe_as_before

pytestmark = pytest.mark.both_engines


async def index_keys(db: Engine, engine: str) -> dict[str, str]:
    """Each index of the subscriptions table on the url key: its name and columns."""
    keys: dict[str, str] = {}
    async with db.read() as conn:
        if engine == "sqlite":
            for index in await conn.fetch_all("PRAGMA index_list('subscriptions')"):
                columns = [c[2] for c in await conn.fetch_all(f"PRAGMA index_info('{index[1]}')")]
                if "url_key" in columns:
                    keys[str(index[1])] = ",".join(columns)
        else:
            for name, definition in await conn.fetch_all(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                "AND tablename = 'subscriptions'"
            ):
                columns = str(definition).partition("(")[2].partition(")")[0].replace(" ", "")
                if "url_key" in columns.split(","):
                    keys[str(name)] = columns
    return keys


async def everything(db: Engine) -> list[tuple[Any, ...]]:
    async with db.read() as conn:
        rows = await conn.fetch_all(
            "SELECT id, user_id, sync_id, guid, feed_url, url_key, subscribed_at, "
            "unsubscribed_at, change_seq FROM subscriptions ORDER BY id"
        )
    return [tuple(row) for row in rows]


async def subscribe(sync: SyncService, user_id: int, *urls: str) -> None:
    await sync.apply(user_id, None, [Subscribe(feed_url=u) for u in urls])


async def claimable(db: Engine) -> set[str]:
    """The url keys the fetcher would claim now (after discovering every change)."""
    async with db.write() as conn:
        await feed_info.discover(conn, now=0, limit=1000)
        due = await feed_info.claim_due(conn, now=0, lease_until=0, limit=1000, claimer="test")
    return {feed.url_key for feed in due}


async def test_step_11_keeps_every_subscription_and_the_fetchers_question(
    config: Config, db_engine: str
) -> None:
    async with database_at(config, db_engine, 10) as db:
        assert await index_keys(db, db_engine) == {
            "subscriptions_url_key": "user_id,url_key",
            "subscriptions_feed": "url_key",
        }
        alice, bob = await add_user(db, "alice"), await add_user(db, "bob")
        now = 1_700_000_000_000_000
        await subscribe_as_before(db, alice, [f"https://a.example/{n}.xml" for n in range(30)], now)
        await subscribe_as_before(
            db, bob, ["https://a.example/0.xml", "https://b.example/feed"], now
        )
        # Nobody is subscribed to a.example/1 any more; bob still is to a.example/0.
        await subscribe_as_before(
            db, alice, ["https://a.example/1.xml"], now + 1, unsubscribed=True
        )
        await subscribe_as_before(
            db, alice, ["https://a.example/0.xml"], now + 2, unsubscribed=True
        )
        before = await everything(db)
    assert len(before) == 32

    db = create_engine(config.database)
    await db.open()  # migrates to the current version
    try:
        assert await everything(db) == before
        assert await index_keys(db, db_engine) == {"subscriptions_url_key": "url_key,user_id"}
        sync = SyncService(db, config.sync)
        # Another spelling of a feed alice holds matches her entity: no second one.
        await subscribe(sync, alice, "HTTP://A.example/2.xml/", "https://a.example/1.xml")
        await subscribe(sync, bob, "https://a.example/5.xml")  # alice's feed, bob's entity
        after = await everything(db)
        assert len(after) == 33
        assert [row[4] for row in after[32:]] == ["https://a.example/5.xml"]
        # The fetcher's question: a.example/1 is subscribed again, b.example by bob.
        keys = await claimable(db)
        assert keys == {f"a.example/{n}.xml" for n in range(30)} | {"b.example/feed"}
        await sync.apply(bob, None, [Unsubscribe(feed_url="https://a.example/0.xml")])
        async with db.write() as conn:  # every feed due again
            await conn.execute("UPDATE feed_info SET next_try_at = 0")
        assert "a.example/0.xml" not in await claimable(db)
    finally:
        await db.close()
    if db_engine == "sqlite":
        assert check(config.database.path).problems == []
