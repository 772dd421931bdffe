"""Schema step 19 on both engines, on a database the release before left: every
entity, URL alias and episode action stays, each pull answers the very views that
release stored, cursors already issued stay valid (each user's numbers go on from
the database's counter), and the database is much smaller afterwards."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from podsync.config import Config
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.items import parse_item
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.gpodder.episodes import EpisodeService
from podsync.storage.engine import Engine, create_engine
from podsync.storage.maintenance import check
from podsync.storage.migrations import sqlite as sqlite_migrations
from podsync.storage.migrations.sqlite_per_user import per_user_numbers
from tests.support.migration_support import (
    add_user,
    database_at,
    store_actions_as_before,
    subscribe_as_before,
)
from tests.support.storage_corpus import history_items

pytestmark = pytest.mark.both_engines

NOW = 1_770_000_000_000_000
# The schema of the release before: every step before the one under test.
BEFORE = sqlite_migrations.MIGRATIONS.index(per_user_numbers)
EPISODE_TABLES = ("episode_actions", "episodes", "episode_feeds", "episode_receipts")


async def size_of(db: Engine, config: Config, engine: str) -> int:
    """Bytes the database takes: the SQLite file (its log checkpointed), or the
    PostgreSQL tables of episode actions with their indexes."""
    if engine == "sqlite":
        con = sqlite3.connect(config.database.path)
        try:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages = con.execute("PRAGMA page_count").fetchone()[0]
            return int(pages) * int(con.execute("PRAGMA page_size").fetchone()[0])
        finally:
            con.close()
    async with db.read() as conn:
        row = await conn.fetch_one(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind = 'r' "
            "AND c.relname IN (?, ?, ?, ?)",
            EPISODE_TABLES,
        )
    return int(row[0])


def plain(row: Any) -> tuple[Any, ...]:
    return tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)


async def snapshot(db: Engine) -> dict[str, Any]:
    async with db.read() as conn:
        views = await conn.fetch_all(
            "SELECT user_id, view FROM episode_actions ORDER BY user_id, seq"
        )
        subscriptions = await conn.fetch_all(
            "SELECT id, user_id, sync_id, guid, feed_url, url_key, subscribed_at, "
            "unsubscribed_at, last_updated, change_seq, changed_at, view "
            "FROM subscriptions ORDER BY id"
        )
        aliases = await conn.fetch_all(
            "SELECT subscription_id, user_id, old_url, changed_seq "
            "FROM subscription_url_aliases ORDER BY subscription_id"
        )
        counter = await conn.fetch_one("SELECT value FROM meta WHERE key = 'change_seq'")
        highest = await conn.fetch_one("SELECT max(seq) FROM episode_actions")
    by_user: dict[int, list[bytes]] = {}
    for user_id, view in views:
        by_user.setdefault(int(user_id), []).append(bytes(view))
    return {
        "views": by_user,
        "subscriptions": [plain(r) for r in subscriptions],
        "aliases": [tuple(r) for r in aliases],
        "counter": int(counter[0]),
        "highest": int(highest[0]),
    }


async def test_step_16_keeps_everything_and_shrinks_the_database(
    config: Config, db_engine: str
) -> None:
    async with database_at(config, db_engine, BEFORE) as db:
        alice, bob, carol = [await add_user(db, name) for name in ("alice", "bob", "carol")]
        feeds = [f"https://feeds.example.org/show{n}/rss.xml" for n in range(10)]
        await subscribe_as_before(db, alice, feeds[:6], NOW)
        await subscribe_as_before(db, bob, feeds[4:], NOW)
        await subscribe_as_before(db, alice, feeds[:1], NOW + 1, unsubscribed=True)
        async with db.write() as conn:  # an OPA update moved a feed: an alias row
            await conn.execute(
                "UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) "
                "WHERE key = 'change_seq'"
            )
            await conn.execute(
                "UPDATE subscriptions SET feed_url = 'https://moved.example.org/2.xml', "
                "change_seq = (SELECT CAST(value AS BIGINT) FROM meta WHERE key = 'change_seq') "
                "WHERE user_id = ? AND url_key = 'feeds.example.org/show2/rss.xml'",
                (alice,),
            )
        for start in range(0, 3000, 500):  # the users' uploads interleave
            for user, name in ((alice, "alice"), (bob, "bob"), (carol, "carol")):
                items = history_items(name, start, 500 if user == alice else 100)
                actions = [parse_item(item, NOW, {}) for item in items]
                await store_actions_as_before(db, user, actions, NOW + start, BEFORE)
        highest_given = (await snapshot(db))["highest"]  # carol's: the last batch
        async with db.write() as conn:  # the last seqs given out were a deleted user's
            await conn.execute("DELETE FROM users WHERE id = ?", (carol,))
        before = await snapshot(db)
        size_before = await size_of(db, config, db_engine)
    assert len(before["views"][alice]) == 3000 and before["aliases"]

    db = create_engine(config.database)
    await db.open()  # migrates
    try:
        size_after = await size_of(db, config, db_engine)
        async with db.read() as conn:
            assert await conn.fetch_one("SELECT count(*) FROM subscription_url_aliases") == (
                len(before["aliases"]),
            )
        service = EpisodeService(db, 10_000, EpisodeWrites(db, UploadBounds(config.gpodder)))
        for user in (alice, bob):
            pull = await service.pull(user, "0", None, None, False)
            body = pull.pieces.first + b"".join([p async for p in pull.pieces.rest()])
            assert body == b",".join(before["views"][user])
        async with db.read() as conn:
            subscriptions = await conn.fetch_all(
                "SELECT id, user_id, sync_id, guid, feed_url, url_key, subscribed_at, "
                "unsubscribed_at, last_updated, change_seq, changed_at, view "
                "FROM subscriptions ORDER BY id"
            )
            counters = await conn.fetch_all("SELECT change_seq, episode_seq FROM users")
        assert [plain(r) for r in subscriptions] == before["subscriptions"]
        assert {tuple(c) for c in counters} == {(before["counter"], highest_given)}
        # Each user's numbers go on from the database's counters: never one given out.
        upload = await service.upload(alice, history_items("alice", 9000, 1))
        assert upload.after == highest_given + 1
    finally:
        await db.close()
    limit = 0.5 if db_engine == "sqlite" else 0.6
    assert size_after < limit * size_before, (size_before, size_after)
    if db_engine == "sqlite":
        assert check(config.database.path).problems == []
