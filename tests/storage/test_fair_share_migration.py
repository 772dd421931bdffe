"""Schema step 24 on both engines: a database of the step before (23) gains
the tables of a person's fetches and of where each name signed in, and a real
`podsync serve` on it bounds Refresh and notes sign-ins at once; what the release
before kept (failed logins of the last minutes) still counts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest

from podsync import timestamps
from podsync.config import Config
from podsync.storage.engine import create_engine
from podsync.store.login_failures import name_digest
from tests.conftest import PASSWORD, ServeProcess
from tests.support.gpodder_support import call
from tests.support.migration_support import add_user, database_at

pytestmark = pytest.mark.both_engines


def login(base: str, password: str) -> int:
    body = json.dumps({"username": "alice", "password": password}).encode()
    return call(base, "POST", "/auth/login", body, **{"Content-Type": "application/json"}).status


async def test_step_24_from_the_step_before(
    config: Config, db_engine: str, serve_process: Callable[..., ServeProcess]
) -> None:
    now = timestamps.now_us()
    async with database_at(config, db_engine, 23) as db:
        await add_user(db, "alice", PASSWORD)
        async with db.write() as conn:
            for n in range(4):  # four wrong passwords of alice's, from this machine
                await conn.execute(
                    "INSERT INTO login_failures (name_hash, address, password_key, first_at, "
                    "failed_at, attempts, door, client, reason) "
                    "VALUES (?, '127.0.0.1', ?, ?, ?, 1, 'opa', '', 'password')",
                    (name_digest("alice"), bytes([n]) * 32, now, now),
                )
    server = await asyncio.to_thread(serve_process, config)
    assert await asyncio.to_thread(login, server.url, "a fifth wrong one") == 401
    assert await asyncio.to_thread(login, server.url, PASSWORD) == 429  # five: locked
    db = create_engine(config.database)
    await db.open()
    try:
        async with db.write() as conn:
            await conn.execute("DELETE FROM login_failures")
        assert await asyncio.to_thread(login, server.url, PASSWORD) == 200
        async with db.read() as conn:
            noted = await conn.fetch_all("SELECT address FROM login_successes")
            fetches = await conn.fetch_all("SELECT count(*) FROM user_fetches")
        assert [tuple(r) for r in noted] == [("127.0.0.1",)]
        assert [tuple(r) for r in fetches] == [(0,)]
    finally:
        await db.close()
