"""On PostgreSQL a user's writes queue in the process before they take a pooled
connection (`PostgresDatabase.write(user=...)`). Each of a user's batches waits for
the one before on the user's lock (`store.meta.lock_user`); a burst of them used to
hold every connection of the pool while waiting, and every other user's request
then waited for a connection until the burst was through. Now the burst holds at
most USER_WRITERS connections, and the others go on meanwhile."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from podsync import timestamps
from podsync.config import SyncConfig
from podsync.errors import NotFound
from podsync.services.accounts import AccountService
from podsync.services.passwords import PasswordService
from podsync.services.sync import SyncService
from podsync.storage.postgres import POOL_MAX, USER_WRITERS, PostgresDatabase
from podsync.store import meta, subscriptions, users
from tests.support.pg_cluster import Cluster
from tests.support.sync_helpers import new_subscribes

BURST = POOL_MAX + 5
# The connections of this database waiting for a user's lock (an advisory lock whose
# key is the user's id: its low 32 bits are `objid`).
WAITING = """
SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND NOT granted AND objid::bigint = $1
AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


async def _waiting(holder: asyncpg.Connection, user_id: int, at_least: int) -> int:
    """How many connections wait for the user's lock, once at least `at_least` do."""
    async with asyncio.timeout(30):
        while True:  # PostgreSQL's state, polled: no event to wait on
            count = int(await holder.fetchval(WAITING, user_id))
            if count >= at_least:
                return count
            await asyncio.sleep(0.02)


async def test_a_burst_of_one_users_writes_leaves_the_pool_to_the_others(
    pg_cluster: Cluster,
) -> None:
    url = pg_cluster.new_database()
    async with PostgresDatabase(url) as db:
        async with db.write() as conn:
            alice = await users.create(conn, "alice", "x", timestamps.now_us())
            bob = await users.create(conn, "bob", "x", timestamps.now_us())
        sync = SyncService(db, SyncConfig())
        # Another process's batch of alice's, holding her lock until it is let go.
        holder = await asyncpg.connect(url)
        await holder.execute("SELECT pg_advisory_lock($1)", alice.id)
        burst = [
            asyncio.create_task(sync.apply(alice.id, "phone", *new_subscribes(n)))
            for n in range(BURST)
        ]
        try:
            assert await _waiting(holder, alice.id, USER_WRITERS) == USER_WRITERS
            # Bob's write and read go on while alice's burst waits; before, both
            # waited for a connection of the pool that alice's batches all held.
            async with asyncio.timeout(10):
                written = await sync.apply(bob.id, "laptop", *new_subscribes(BURST))
                async with db.read() as conn:
                    assert await subscriptions.count_entities(conn, bob.id) == 30
            assert [r.status for r in written.results] == ["applied"] * 30
            await asyncio.sleep(0.2)  # the rest of the burst had time to come in
            assert int(await holder.fetchval(WAITING, alice.id)) == USER_WRITERS
            assert not any(task.done() for task in burst)
        finally:
            await holder.execute("SELECT pg_advisory_unlock($1)", alice.id)
            await holder.close()
        # Let go, every batch of the burst is applied, each in its turn.
        outcomes = await asyncio.gather(*burst)
        assert all(r.status == "applied" for outcome in outcomes for r in outcome.results)
        seqs = sorted(outcome.user_seq_after for outcome in outcomes)
        assert len(set(seqs)) == BURST
        async with db.read() as conn:
            assert await subscriptions.count_entities(conn, alice.id) == 30 * BURST
        assert not db._user_gates  # no gate left behind once nothing waits


async def test_writes_of_other_users_are_not_queued_behind_each_other(
    pg_cluster: Cluster,
) -> None:
    """The gate is per user: while one user's lock is held, each other user's write
    goes straight through."""
    url = pg_cluster.new_database()
    async with PostgresDatabase(url) as db:
        async with db.write() as conn:
            names = [await users.create(conn, f"u{i}", "x", timestamps.now_us()) for i in range(4)]
        sync = SyncService(db, SyncConfig())
        holder = await asyncpg.connect(url)
        await holder.execute("SELECT pg_advisory_lock($1)", names[0].id)
        stuck = asyncio.create_task(sync.apply(names[0].id, "p", *new_subscribes(0)))
        try:
            await _waiting(holder, names[0].id, 1)
            async with asyncio.timeout(10):
                done = await asyncio.gather(
                    *(sync.apply(u.id, "p", *new_subscribes(n)) for n, u in enumerate(names) if n)
                )
            assert all(r.status == "applied" for outcome in done for r in outcome.results)
            assert not stuck.done()
        finally:
            await holder.execute("SELECT pg_advisory_unlock($1)", names[0].id)
            await holder.close()
        assert all(r.status == "applied" for r in (await stuck).results)


async def test_a_write_that_takes_a_users_lock_names_the_user(pg_cluster: Cluster) -> None:
    """A write that takes a user's lock without opening as `write(user=)` that user
    fails at the lock (a mistake in podsync's code, which every PostgreSQL test of
    that write would show), and changes nothing."""
    url = pg_cluster.new_database()
    async with PostgresDatabase(url) as db:
        async with db.write() as conn:
            alice = await users.create(conn, "alice", "x", timestamps.now_us())
            bob = await users.create(conn, "bob", "x", timestamps.now_us())
        for opened_for in (None, bob.id):
            with pytest.raises(meta.UngatedWrite, match=f"write\\(user={alice.id}\\)"):
                async with db.write(user=opened_for) as conn:
                    await users.set_admin(conn, alice.id, True)
                    await meta.lock_user(conn, alice.id)
        async with db.write(user=alice.id) as conn:
            await meta.lock_user(conn, alice.id)
        async with db.read() as conn:
            found = await users.get_by_id(conn, alice.id)
        assert found is not None and not found.admin  # the failed writes rolled back
        assert not db._user_gates


async def test_an_admins_account_changes_open_for_the_user(pg_cluster: Cluster) -> None:
    """`user passwd`, `user disable` and `user logout` find the user by name, and
    write as that user's (the gate, the lock); a name that is gone is NotFound."""
    url = pg_cluster.new_database()
    async with PostgresDatabase(url) as db:
        accounts = AccountService(db, PasswordService(memory_kib=8192, time_cost=1))
        alice = await accounts.add_user("alice", "correct horse battery")
        before = alice.token_generation
        await accounts.set_password("alice", "another long password")
        await accounts.logout("alice")
        await accounts.set_enabled("alice", False)
        changed = await accounts.get_user("alice")
        assert not changed.enabled and changed.token_generation > before
        assert changed.password_hash != alice.password_hash
        with pytest.raises(NotFound):
            await accounts.logout("nobody")
