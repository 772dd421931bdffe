"""podsync's keys compare bytewise on PostgreSQL whatever the database's collation.

podsync's keys (URL keys, guids, sync and action ids) are looked up and indexed by
text comparisons; under a language's collation (`en_US.UTF-8`, the `postgres`
image's default, or ICU's) they cost about a quarter of PostgreSQL's CPU a sync
batch (docs/performance.md). Schema step 31 declares every indexed text column
`COLLATE "C"` (users' name aside: its index folds case by the database's rules), so
that every database, whatever it was created with, indexes them as SQLite does.
From a database of 0.3.0 the steps keep every row, and the batch's read finds the
same entities after them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import pytest

from podsync import timestamps
from podsync.config import Config, SyncConfig
from podsync.rules import Subscribe
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine, create_engine
from podsync.storage.migrations.postgres import MIGRATIONS
from podsync.storage.migrations.postgres_steps_0_4 import BYTEWISE_COLUMNS, BYTEWISE_KEYS
from podsync.storage.postgres import PostgresDatabase
from podsync.store import users
from tests.storage.test_guid_index_migration import RELEASE_0_3_0, found_by_guid
from tests.storage.test_subscription_indexes_migration import stored
from tests.support.migration_support import add_user, database_at
from tests.support.pg_cluster import Cluster

# CREATE DATABASE options of the databases an operator may have.
DATABASES = {
    "c": "LC_COLLATE 'C'",
    "posix": "LC_COLLATE 'POSIX'",
    "c-utf8": "LC_COLLATE 'C.UTF-8'",
    "icu": "LOCALE_PROVIDER icu ICU_LOCALE 'en-US'",
    "libc-language": "LC_COLLATE 'en_US.UTF-8'",
}
# The indexes that keep the database's rules: users' name, compared as typed and
# with lower().
BY_THE_DATABASE = {"users_name_key", "users_name_lower"}
STEP = next(n for n, s in enumerate(MIGRATIONS, 1) if s is BYTEWISE_KEYS)
URLS = ["https://B.example/feed", "https://a.example/feed", "https://é.example/feed"]

# Every collation an index of the current schema compares a text key by.
INDEX_COLLATIONS = """
SELECT c.relname, l.collname
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL unnest(i.indcollation::oid[]) AS k(coll)
JOIN pg_collation l ON l.oid = k.coll
WHERE n.nspname = current_schema()
ORDER BY 1
"""


@asynccontextmanager
async def database(cluster: Cluster, options: str) -> AsyncIterator[str]:
    """A database of its own made with `options`, as a URL; dropped afterwards."""
    name = f"coll{abs(hash(options)) % 10**8}"
    admin = await asyncpg.connect(cluster.url())
    try:
        try:
            await admin.execute(f"CREATE DATABASE {name} TEMPLATE template0 {options}")
        except asyncpg.WrongObjectTypeError as exc:  # a locale this machine lacks
            if "invalid locale name" not in str(exc):
                raise
            pytest.skip(f"needs the locale of {options}: apt-get install locales, locale-gen")
        try:
            yield cluster.url(name)
        finally:
            await admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
    finally:
        await admin.close()


async def index_collations(url: str) -> dict[str, set[str]]:
    """Each index's collations; those of users' name are checked to be the
    database's own, the others are returned."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(INDEX_COLLATIONS)
    finally:
        await conn.close()
    found: dict[str, set[str]] = {}
    for index, collation in rows:
        found.setdefault(index, set()).add(collation)
    kept = {index: found.pop(index, None) for index in BY_THE_DATABASE}
    assert kept == {index: {"default"} for index in BY_THE_DATABASE}, kept
    return found


def assert_bytewise(keyed: dict[str, set[str]]) -> None:
    """Every index of a text key compares under "C", the subscription table's keys,
    the feeds', the action ids' and the queue's among them."""
    assert {"subscriptions_url_key", "subscriptions_guid", "feed_info_pkey"} <= set(keyed)
    assert {"actions_pkey", "feed_episodes_guid", "up_next_pkey"} <= set(keyed)
    assert all(names == {"C"} for names in keyed.values()), keyed


def test_the_step_names_existing_columns_once() -> None:
    assert STEP == 31
    columns = [(table, column) for table, names in BYTEWISE_COLUMNS.items() for column in names]
    assert len(columns) == len(set(columns))
    assert ("users", "name") not in columns


@pytest.mark.parametrize("case", DATABASES)
async def test_every_key_index_compares_bytes_whatever_the_database(
    pg_cluster: Cluster, case: str
) -> None:
    async with database(pg_cluster, DATABASES[case]) as url:
        async with PostgresDatabase(url) as db:  # runs every schema step
            async with db.write() as conn:
                user = await users.create(conn, "alice", "x", timestamps.now_us())
            sync = SyncService(db, SyncConfig())
            outcome = await sync.apply(user.id, "phone", [Subscribe(u) for u in URLS])
            assert [r.status for r in outcome.results] == ["applied"] * 3
        keyed = await index_collations(url)
    assert_bytewise(keyed)


@pytest.mark.both_engines
async def test_step_31_keeps_every_row_and_finds_every_guid(config: Config, db_engine: str) -> None:
    urls = [f"https://feeds.example/{n}.xml" for n in range(8)] + URLS
    guids = {f"guid-{n}" for n in range(len(urls))}
    async with database_at(config, db_engine, RELEASE_0_3_0) as db:
        alice, bob = await add_user(db, "alice"), await add_user(db, "bob")
        sync = SyncService(db, config.sync)
        await sync.apply(alice, None, [Subscribe(u, guid=f"guid-{n}") for n, u in enumerate(urls)])
        await sync.apply(bob, None, [Subscribe(u, guid=f"guid-{n}") for n, u in enumerate(URLS)])
        rows = await stored(db)
        before = {user: await found_by_guid(db, user, guids) for user in (alice, bob)}
    assert [len(found) for found in before.values()] == [len(urls), len(URLS)]

    db: Engine = create_engine(config.database)
    await db.open()  # runs the steps after 0.3.0's, 31 among them
    try:
        if db_engine == "postgresql":
            assert_bytewise(await index_collations(str(config.database.url)))
        assert await stored(db) == rows
        assert {user: await found_by_guid(db, user, guids) for user in (alice, bob)} == before
        # Written after the step: a known guid under another URL finds alice's entity
        # (no second one is added), and a new guid is added and found.
        sync = SyncService(db, config.sync)
        await sync.apply(alice, None, [Subscribe("https://moved.example/0.xml", guid="guid-0")])
        await sync.apply(alice, None, [Subscribe("https://feeds.example/new.xml", guid="new")])
        assert len(await stored(db)) == len(rows) + 1
        assert len(await found_by_guid(db, alice, guids | {"new"})) == len(urls) + 1
    finally:
        await db.close()
