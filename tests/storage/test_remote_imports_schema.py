"""Schema step 18 on both engines: a database of the step before (17) gains
the table of imports from another server, which allows one running import per user
and goes with its user."""

from __future__ import annotations

import pytest

from podsync.config import Config
from podsync.storage.engine import create_engine
from podsync.store import remote_imports
from tests.support.migration_support import add_user, database_at

pytestmark = pytest.mark.both_engines


async def test_step_18_adds_the_imports_one_running_per_user(
    config: Config, db_engine: str
) -> None:
    async with database_at(config, db_engine, 17) as db:
        alice = await add_user(db, "alice")
        bob = await add_user(db, "bob")
        async with db.read() as conn:
            with pytest.raises(Exception, match="remote_imports"):
                await conn.fetch_one("SELECT count(*) FROM remote_imports")
    db = create_engine(config.database)
    await db.open()  # migrates to the current version
    try:
        async with db.write() as conn:
            first = await remote_imports.add(conn, alice, "web", "https://a.example", "a", 1)
            await remote_imports.add(conn, bob, "cli", "https://a.example", "b", 1)
        with pytest.raises(Exception, match=r"(?i)unique"):
            async with db.write() as conn:
                await remote_imports.add(conn, alice, "cli", "https://b.example", "a", 2)
        async with db.write() as conn:
            await remote_imports.finish(conn, first, "done", '{"server": "x"}', None, 3)
            second = await remote_imports.add(conn, alice, "cli", "https://b.example", "a", 4)
            assert await remote_imports.ask_to_stop(conn, alice, second)
            assert not await remote_imports.ask_to_stop(conn, bob, second)  # not his
            assert await remote_imports.beat(conn, second, None, "17", 5)  # asked to stop
            await conn.execute("DELETE FROM users WHERE id = ?", (alice,))
        async with db.read() as conn:
            left = await conn.fetch_all("SELECT user_id FROM remote_imports")
        assert [int(row[0]) for row in left] == [bob]
    finally:
        await db.close()
