"""Schema step 13 on both engines: a database of the release before (step 12) with
episode actions already stored gains the Login Flow v2 table and the index of
episode actions by arrival; migrated on to the current schema, the Nextcloud API
still finds the old actions by the second they arrived."""

from __future__ import annotations

import pytest

from podsync.config import Config
from podsync.storage.engine import create_engine
from podsync.store import episode_actions
from tests.support.migration_support import add_user, database_at

pytestmark = pytest.mark.both_engines


async def test_step_13_adds_login_flows_and_reads_old_actions_by_arrival(
    config: Config, db_engine: str
) -> None:
    async with database_at(config, db_engine, 12) as db:
        alice = await add_user(db, "alice")
        async with db.write() as conn:
            for n, received in ((1, 1_000_000_000), (2, 2_000_000_000)):
                await conn.execute(
                    "INSERT INTO episode_actions (user_id, podcast_url, podcast_key, "
                    "episode_url, action, occurred_at, received_at, content_hash, view) "
                    "VALUES (?, 'http://a.example/f', 'a.example/f', ?, 'new', 0, ?, ?, ?)",
                    (alice, f"http://a.example/{n}", received, bytes([n]) * 32, b'{"n":%d}' % n),
                )
        async with db.read() as conn:
            with pytest.raises(Exception, match="login_flows"):
                await conn.fetch_one("SELECT count(*) FROM login_flows")
    async with database_at(config, db_engine, 13) as db, db.read() as conn:  # the step
        assert (await conn.fetch_one("SELECT count(*) FROM login_flows"))[0] == 0
        if db_engine == "sqlite":
            plan = await conn.fetch_all(
                "EXPLAIN QUERY PLAN SELECT view FROM episode_actions "
                "WHERE user_id = ? AND received_at >= ?",
                (alice, 0),
            )
            assert any("episode_actions_received" in str(row[-1]) for row in plan), plan
    db = create_engine(config.database)
    await db.open()  # migrates to the current version: arrivals kept per second
    try:
        async with db.read() as conn:
            bounds = await episode_actions.received_bounds(conn, alice, 1500, 1500)
            head = await episode_actions.max_seq(conn, alice)
            seqs = [row[0] for row in await episode_actions.received_page(conn, alice, 0, head, 10)]
            assert bounds == (seqs[1], seqs[1])
            later = await episode_actions.received_page(conn, alice, bounds[0] - 1, head, 10)
            assert [(row[0], row[2]) for row in later] == [(seqs[1], "2")]  # seq, URL unprefixed
    finally:
        await db.close()
