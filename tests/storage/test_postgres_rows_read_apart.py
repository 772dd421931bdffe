"""The rows a read reads, as the row-counting tests count them (tests/support/pg_rows.py),
do not depend on what other tests do meanwhile, in a database of the test's own.

In the cluster's shared database another test's open snapshot keeps this test's old
row versions (its updates' dead rows) from being pruned, and an index scan then reads
their entries too: the counts of a page of history and of the statistics' weeks went
over their bounds that way, each in one run of the suite. A database of its own
(`own_pg_database`) is beyond another database's snapshots."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from podsync.storage.postgres import PostgresDatabase
from tests.support.pg_cluster import Cluster
from tests.support.pg_rows import autovacuum_off, rows_read

ROWS = 2000
UPDATES = 6  # of every row, each its own transaction
WANTED = 100  # rows the read answers


@asynccontextmanager
async def _snapshot_held(url: str, held: bool) -> AsyncIterator[None]:
    """Another test's open transaction in the database at `url`, with its snapshot."""
    conn = await asyncpg.connect(url)
    try:
        if held:
            async with conn.transaction(isolation="repeatable_read"):
                await conn.fetchval("SELECT 1")
                yield
        else:
            yield
    finally:
        await conn.close()


async def _entries_read(url: str, other: str, held: bool) -> int:
    """Rows and index entries a read of WANTED rows reads of a table whose rows were
    all updated UPDATES times, while a snapshot is (or is not) open at `other`."""
    async with _snapshot_held(other, held), PostgresDatabase(url) as db:
        async with db.write() as conn:
            await conn.execute("CREATE TABLE counted (id integer PRIMARY KEY, n integer)")
            await autovacuum_off(conn)
            await conn.execute(
                "INSERT INTO counted SELECT i, 0 FROM generate_series(1, ?) AS i", (ROWS,)
            )
        for _ in range(UPDATES):
            async with db.write() as conn:
                await conn.execute("UPDATE counted SET n = n + 1")
        async with db.snapshot() as conn:
            await conn.fetch_one("SELECT set_config('enable_seqscan', 'off', true)")
            await conn.fetch_one("SELECT set_config('enable_bitmapscan', 'off', true)")
            before = await rows_read(conn)
            rows = await conn.fetch_all("SELECT n FROM counted WHERE id <= ?", (WANTED,))
            after = await rows_read(conn)
    assert rows == [(UPDATES,)] * WANTED
    return after["counted"] - before.get("counted", 0)


async def test_a_database_of_its_own_counts_alike_beside_an_open_snapshot(
    pg_cluster: Cluster,
) -> None:
    shared = pg_cluster.url("podsync")
    with pg_cluster.own_database() as own:
        quiet = await _entries_read(own, shared, held=False)
    with pg_cluster.own_database() as own:
        beside = await _entries_read(own, shared, held=True)
    assert quiet == beside, (quiet, beside)
    # In the shared database the same snapshot makes the read read the dead rows'
    # entries too (as may any other test's of the suite, running meanwhile).
    crowded = await _entries_read(pg_cluster.new_database(), shared, held=True)
    assert crowded > quiet + WANTED, (quiet, crowded)
