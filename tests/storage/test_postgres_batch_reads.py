"""A sync batch on PostgreSQL reads the action ids it looks up, not every action
row of the user, and never reads the user's entities once per key.

The tables here are never ANALYZEd (as a new instance's, or a growing table's
between two runs of autovacuum): that is when PostgreSQL's planner, left to choose,
served the action-id lookup from the user's whole range of the primary key and read
every action row of the user on each batch. Rows read are counted by the
backend's statistics not yet reported (pg_stat_xact_user_tables, read before and
after), which hold on a busy machine where timings do not."""

from __future__ import annotations

from podsync import rules, timestamps
from podsync.config import SyncConfig
from podsync.model import RecordedAction
from podsync.services.sync import SyncService
from podsync.storage.postgres import PgConnection, PostgresDatabase
from podsync.store import actions as action_log
from podsync.store import meta, users
from podsync.store import sync_batch as batch_store
from tests.support.pg_cluster import Cluster
from tests.support.sync_helpers import new_subscribes

BATCHES = 40
BATCH = 30


async def _rows_read(conn: PgConnection, table: str) -> int:
    row = await conn.fetch_one(
        "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
        "FROM pg_stat_xact_user_tables WHERE relid = ?::regclass",
        (table,),
    )
    return int(row[0])


async def test_a_batch_looks_up_its_action_ids_without_reading_the_users_rows(
    pg_cluster: Cluster,
) -> None:
    async with PostgresDatabase(pg_cluster.new_database()) as db:
        async with db.write() as conn:
            user = await users.create(conn, "alice", "x", timestamps.now_us())
        sync = SyncService(db, SyncConfig())
        for n in range(BATCHES):
            commands, keys = new_subscribes(n)
            await sync.apply(user.id, "phone", commands, keys)
        stored = BATCHES * BATCH
        # The next batch's keys: half already recorded, half new.
        old_commands, old_keys = new_subscribes(BATCHES - 1)
        new_commands, new_keys = new_subscribes(BATCHES)
        wanted = [k.action_id for k in (*old_keys[:15], *new_keys[:15]) if k is not None]
        async with db.write() as conn:
            before = await _rows_read(conn, "actions")
            found = await action_log.get_many(conn, user.id, wanted, newer_than=0)
            assert len(found) == 15
            actions_read = await _rows_read(conn, "actions") - before
        # Each id read once (an index entry and its row), whatever the user holds.
        assert actions_read <= 2 * len(wanted) < stored
        # The same through the batch's one read statement, with the entities' keys.
        keys = rules.lookup_keys([*old_commands, *new_commands])
        async with db.write() as conn:
            before_actions = await _rows_read(conn, "actions")
            before_entities = await _rows_read(conn, "subscriptions")
            loaded = await batch_store.load(conn, user.id, wanted, 0, keys, count=True)
            actions_read = await _rows_read(conn, "actions") - before_actions
            entities_read = await _rows_read(conn, "subscriptions") - before_entities
        assert len(loaded.recorded) == 15
        assert len(loaded.entities) == BATCH
        assert actions_read <= 2 * len(wanted) < stored
        # The entities: by index once PostgreSQL knows the table; before that, at worst
        # a pass over the user's rows per kind of key, never one per key (60 keys).
        assert entities_read <= 6 * stored


async def test_a_batch_planned_while_its_tables_were_empty_still_looks_its_keys_up(
    pg_cluster: Cluster,
) -> None:
    """A connection keeps its plan of the batch's read. Made while the tables held
    nothing (a new instance, or tables empty when last analysed), PostgreSQL's plan
    scanned the whole actions table once per action id, and kept doing so on every
    batch after it until the next ANALYZE."""
    async with PostgresDatabase(pg_cluster.new_database()) as db:
        async with db.write() as conn:
            user = await users.create(conn, "alice", "x", timestamps.now_us())
            await conn.execute("ANALYZE actions; ANALYZE subscriptions")
        async with db.write(user=user.id) as conn:
            await meta.lock_user(conn, user.id, keyed_plans=True)
            commands, keys = new_subscribes(0)
            wanted = [k.action_id for k in keys if k is not None]
            lookup = rules.lookup_keys(commands)
            # Planned on the empty tables (PostgreSQL's own choice made a plan for
            # each call's values the first five times, then kept a generic one).
            for _ in range(6):
                await batch_store.load(conn, user.id, wanted, 0, lookup, count=True)
            now = timestamps.now_us()
            await action_log.record_many(
                conn,
                user.id,
                [
                    RecordedAction(f"old-{n}", "applied", None, None, now, "f")
                    for n in range(BATCHES * BATCH)
                ],
            )
            before = await _rows_read(conn, "actions")
            await batch_store.load(conn, user.id, wanted, 0, lookup, count=True)
            assert await _rows_read(conn, "actions") - before <= 2 * len(wanted)


async def test_a_batch_planned_on_a_new_database_reads_only_its_keys_as_the_user_grows(
    pg_cluster: Cluster,
) -> None:
    """A new instance: the batch's read is planned while the subscription table is
    empty (the migrations' ANALYZE saw it so) and kept by the connection, and no
    ANALYZE comes while the user grows to thousands of subscriptions (autovacuum
    is off for the tables, as in a new instance's first minute). PostgreSQL's plan on
    those statistics looked the batch's url keys and guids, and the user's last
    change number, up through an index on the user alone, reading all of the user's
    subscriptions three times on every batch."""
    async with PostgresDatabase(pg_cluster.new_database()) as db:
        async with db.write() as conn:
            await conn.execute(
                "ALTER TABLE subscriptions SET (autovacuum_enabled = false); "
                "ALTER TABLE actions SET (autovacuum_enabled = false)"
            )
            user = await users.create(conn, "alice", "x", timestamps.now_us())
        sync = SyncService(db, SyncConfig())
        most = 0
        for n in range(GROWN_BATCHES):
            if n % 25 == 0:  # the first probe plans the read on the empty tables
                most = max(most, await _subscriptions_read_by_a_batch(db, user.id, n))
            await sync.apply(user.id, "phone", *new_subscribes(n))
        last = await _subscriptions_read_by_a_batch(db, user.id, GROWN_BATCHES)
        # The 30 entities the probe's keys name (by url key and by guid: 60 rows)
        # and the user's last change number, whatever the user holds.
        assert max(most, last) <= 4 * BATCH < GROWN_BATCHES * BATCH


GROWN_BATCHES = 300


async def _subscriptions_read_by_a_batch(db: PostgresDatabase, user_id: int, n: int) -> int:
    """Rows of `subscriptions` read by the read of a batch naming the 15 last
    entities of batch n - 1 (none for n = 0) and 15 new feeds."""
    old_commands, old_keys = new_subscribes(n - 1)
    new_commands, new_keys = new_subscribes(n)
    commands = [*old_commands[15:], *new_commands[:15]]
    wanted = [k.action_id for k in (*old_keys[15:], *new_keys[:15]) if k is not None]
    async with db.write(user=user_id) as conn:
        await meta.lock_user(conn, user_id, keyed_plans=True)
        before = await _rows_read(conn, "subscriptions")
        loaded = await batch_store.load(
            conn, user_id, wanted, 0, rules.lookup_keys(commands), count=True
        )
        read = await _rows_read(conn, "subscriptions") - before
    assert len(loaded.entities) == (15 if n > 0 else 0)
    return read


async def test_the_batch_read_is_never_compiled(pg_cluster: Cluster) -> None:
    """The read's row comparisons make PostgreSQL expect hundreds of rows a key, so
    for a user of a few thousand subscriptions its plan costs past jit_above_cost,
    and a server built with JIT compiled the read on every batch (8-19 ms, for a
    read of 0.2 ms). The batch's transaction turns JIT off."""
    async with PostgresDatabase(pg_cluster.new_database()) as db:
        async with db.write() as conn:
            user = await users.create(conn, "alice", "x", timestamps.now_us())
        async with db.write(user=user.id) as conn:
            await meta.lock_user(conn, user.id, keyed_plans=True)
            row = await conn.fetch_one("SELECT current_setting('jit')")
        assert row[0] == "off"
