"""A sync batch on PostgreSQL records the action ids its read found nowhere with a
plain INSERT, and still overwrites an id past retention that the log still holds.

An upsert (INSERT ... ON CONFLICT) looks each row up in the unique index before
inserting it; the batch's read already looked the ids up under the user's lock, so
that second lookup is work for nothing. Index lookups are counted by the backend's
statistics not yet reported (pg_stat_get_xact_numscans), which hold on a busy
machine where timings do not."""

from __future__ import annotations

from podsync import rules, timestamps
from podsync.config import SyncConfig
from podsync.model import RecordedAction
from podsync.services.sync import ActionKey, SyncService
from podsync.storage.postgres import PgConnection, PostgresDatabase
from podsync.store import actions as action_log
from podsync.store import meta, users
from podsync.store import sync_batch as batch_store
from tests.support.pg_cluster import Cluster
from tests.support.sync_helpers import new_subscribes

BATCH = 30
DAY_US = 86_400_000_000


async def _lookups(conn: PgConnection) -> int:
    row = await conn.fetch_one("SELECT pg_stat_get_xact_numscans('actions_pkey'::regclass)")
    return int(row[0])


async def test_new_action_ids_are_recorded_without_a_second_lookup(pg_cluster: Cluster) -> None:
    async with PostgresDatabase(pg_cluster.new_database()) as db:
        async with db.write() as conn:
            user = await users.create(conn, "alice", "x", timestamps.now_us())
        sync = SyncService(db, SyncConfig())
        await sync.apply(user.id, "phone", *new_subscribes(0))
        commands, keys = new_subscribes(1)
        ids = [k.action_id for k in keys]
        now = timestamps.now_us()
        async with db.write(user=user.id) as conn:
            await meta.lock_user(conn, user.id, keyed_plans=True)
            loaded = await batch_store.load(
                conn, user.id, ids, 0, rules.lookup_keys(commands), count=True
            )
            assert loaded.recorded == {} and loaded.expired == frozenset()
            plan = rules.Plan(user.id, "phone", loaded.entities, now)
            results = plan.apply_all(commands)
            records = [
                RecordedAction(k.action_id, r.status, r.reason, r.sync_id, now, k.fingerprint)
                for k, r in zip(keys, results, strict=True)
            ]
            before = await _lookups(conn)
            saved = await batch_store.save(
                conn, user.id, plan.changes(), now, records, loaded.expired
            )
            assert len(saved) == BATCH
            # The read's 30 lookups were the only ones: none more to write the rows.
            assert await _lookups(conn) - before == 0
        async with db.read() as conn:
            recorded = await action_log.get_many(conn, user.id, ids, 0)
        assert sorted(recorded) == sorted(ids)
        assert {r.status for r in recorded.values()} == {"applied"}


async def test_an_action_id_past_retention_and_not_yet_pruned_runs_again(
    pg_cluster: Cluster,
) -> None:
    """Its row is still in the log: the batch overwrites it (no duplicate key)."""
    async with PostgresDatabase(pg_cluster.new_database()) as db:
        async with db.write() as conn:
            user = await users.create(conn, "alice", "x", timestamps.now_us())
        config = SyncConfig()
        sync = SyncService(db, config)
        now = timestamps.now_us()
        first = ActionKey("0d5b7f3c-1d7e-4b8a-9c55-6f1e2d3c4b5a", "f")
        other = ActionKey("1d5b7f3c-1d7e-4b8a-9c55-6f1e2d3c4b5a", "f")
        outcome = await sync.apply(
            user.id, "phone", [rules.Subscribe("https://a.example/rss", now)], [first], now=now
        )
        assert outcome.results[0].status == "applied"
        # Past retention, before any prune: the id is forgotten, not gone from the log.
        later = now + (config.action_id_retention_days + 1) * DAY_US
        outcome = await sync.apply(
            user.id,
            "phone",
            [
                rules.Subscribe("https://b.example/rss", later),
                rules.Subscribe("https://c.example/rss", later),
            ],
            [first, other],
            now=later,
        )
        assert [r.status for r in outcome.results] == ["applied", "applied"]
        async with db.read() as conn:
            recorded = await action_log.get_many(conn, user.id, [first.action_id], 0)
        assert recorded[first.action_id].received_at == later
