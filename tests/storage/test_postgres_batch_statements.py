"""A sync batch on PostgreSQL is five statements from the BEGIN to the COMMIT, and
still holds its user's row until it commits.

The statements are counted by pg_stat_statements, on a cluster of this module's own
that loads it: the BEGIN, the user's lock (which also sets the batch's plan
settings), the read (which takes the user's row FOR KEY SHARE), the write and the
COMMIT. The lock was seven statements of one simple query (four SET LOCAL, the
advisory lock, the user's row), each parsed and run, and the row's SELECT planned,
on every batch."""

from __future__ import annotations

from collections.abc import Iterator

import asyncpg
import pytest

from podsync import rules, timestamps
from podsync.config import SyncConfig
from podsync.errors import Unauthorized
from podsync.services.sync import SyncService
from podsync.storage.postgres import PostgresDatabase
from podsync.store import meta, users
from podsync.store import sync_batch as batch_store
from podsync.store.meta import ACCOUNT_GONE
from tests.support.pg_cluster import Cluster, find_bin, start_cluster
from tests.support.sync_helpers import new_subscribes

BATCH = 30


@pytest.fixture(scope="module")
def counted_cluster() -> Iterator[Cluster]:
    """A cluster that loads pg_stat_statements (PostgreSQL's own packages ship it)."""
    bin_dir = find_bin()
    if bin_dir is not None and not (bin_dir.parent / "lib" / "pg_stat_statements.so").is_file():
        pytest.skip("pg_stat_statements is not installed beside PostgreSQL")
    cluster = start_cluster(shared_preload_libraries="pg_stat_statements")
    yield cluster
    cluster.stop()


async def test_a_batch_of_new_subscribes_is_five_statements(counted_cluster: Cluster) -> None:
    async with PostgresDatabase(counted_cluster.new_database()) as db:
        async with db.write() as conn:
            user = await users.create(conn, "alice", "x", timestamps.now_us())
            await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public")
        sync = SyncService(db, SyncConfig())
        await sync.apply(user.id, "phone", *new_subscribes(0))  # prepares the statements
        async with db.read() as conn:
            await conn.fetch_one("SELECT public.pg_stat_statements_reset()")
        outcome = await sync.apply(user.id, "phone", *new_subscribes(1))
        assert [r.status for r in outcome.results] == ["applied"] * BATCH
        async with db.read() as conn:
            rows = await conn.fetch_all(
                "SELECT query, calls FROM public.pg_stat_statements "
                "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                "AND query NOT LIKE '%pg_stat_statements%'"
            )
    statements = sorted((str(query).split()[0], int(calls)) for query, calls in rows)
    assert sum(calls for _, calls in statements) == 5, statements
    assert [word for word, _ in statements] == ["BEGIN", "COMMIT", "SELECT", "WITH", "WITH"]


async def test_a_batch_for_a_deleted_account_writes_nothing(pg_cluster: Cluster) -> None:
    """Deleted after its request authenticated: Unauthorized, and no row written."""
    async with PostgresDatabase(pg_cluster.new_database()) as db:
        async with db.write() as conn:
            user = await users.create(conn, "alice", "x", timestamps.now_us())
        async with db.write() as conn:
            await users.delete(conn, user.id)
        with pytest.raises(Unauthorized, match=ACCOUNT_GONE):
            await SyncService(db, SyncConfig()).apply(user.id, "phone", *new_subscribes(0))
        async with db.read() as conn:
            row = await conn.fetch_one(
                "SELECT (SELECT count(*) FROM subscriptions), (SELECT count(*) FROM actions)"
            )
        assert tuple(row) == (0, 0)


async def test_the_batch_holds_its_users_row_until_it_commits(pg_cluster: Cluster) -> None:
    """A `user delete` that comes while the batch runs waits for its COMMIT, so that
    it deletes the batch's rows too: the row is taken by the batch's read."""
    url = pg_cluster.new_database()
    async with PostgresDatabase(url) as db:
        async with db.write() as conn:
            user = await users.create(conn, "alice", "x", timestamps.now_us())
        commands, keys = new_subscribes(0)
        other = await asyncpg.connect(url)
        try:
            await other.execute("SET lock_timeout = '200ms'")
            async with db.write(user=user.id) as conn:
                await meta.lock_user(conn, user.id, keyed_plans=True)
                ids = [k.action_id for k in keys if k is not None]
                await batch_store.load(conn, user.id, ids, 0, rules.lookup_keys(commands), True)
                with pytest.raises(asyncpg.LockNotAvailableError):
                    await other.execute("DELETE FROM users WHERE id = $1", user.id)
        finally:
            await other.close()
