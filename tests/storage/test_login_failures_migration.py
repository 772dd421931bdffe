"""Schema step 16 on both engines: a failed login is kept once per wrong password (a
keyed hash of it). The failures a database of the release before holds stay
failures of their own, so a lockout in progress still holds after the upgrade, and
what the new release records beside them counts a repeat once. Through a real
`podsync serve` on the migrated database and the real CLI."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiohttp
import pytest

from podsync import timestamps
from podsync.config import Config
from podsync.storage.engine import create_engine
from podsync.store.login_failures import name_digest
from tests.conftest import PASSWORD, ServeProcess
from tests.support.migration_support import database_at
from tests.support.ui_session import cli

pytestmark = pytest.mark.both_engines


async def _login(base: str, password: str) -> int:
    async with (
        aiohttp.ClientSession() as http,
        http.post(base + "/auth/login", json={"username": "alice", "password": password}) as r,
    ):
        return r.status


async def test_step_16_keeps_a_lockout_in_progress_and_counts_repeats_once_after(
    config: Config, db_engine: str, serve_process: Callable[..., ServeProcess]
) -> None:
    now = timestamps.now_us()
    async with database_at(config, db_engine, 15) as db, db.write() as conn:
        # What release 0.2 kept of four failures of alice from this machine, and one
        # of bob's: a row per failure, no password at all.
        for n in range(4):
            await conn.execute(
                "INSERT INTO login_failures (name_hash, address, failed_at) VALUES (?, ?, ?)",
                (name_digest("alice"), "127.0.0.1", now - (4 - n) * 1_000_000),
            )
        await conn.execute(
            "INSERT INTO login_failures (name_hash, address, failed_at) VALUES (?, ?, ?)",
            (name_digest("bob"), "127.0.0.1", now),
        )
    await asyncio.to_thread(cli, config, "user", "add", "alice", "--password-stdin", input=PASSWORD)
    server = await asyncio.to_thread(serve_process, config)
    # Four old failures and one new wrong password: five, the lockout (default 5).
    assert await _login(server.url, "a wrong one") == 401
    assert await _login(server.url, PASSWORD) == 429
    await asyncio.to_thread(cli, config, "user", "unlock", "alice")
    # After the upgrade a repeat is one failure: the right password still works.
    for _ in range(6):
        assert await _login(server.url, "a wrong one") == 401
    assert await _login(server.url, PASSWORD) == 200
    db = create_engine(config.database)
    await db.open()
    try:
        async with db.read() as conn:
            rows = await conn.fetch_all(
                "SELECT name_hash, attempts, first_at <= failed_at, length(password_key) "
                "FROM login_failures ORDER BY id"
            )
    finally:
        await db.close()
    # bob's old failure kept as it was (its time as its first), alice's one new row.
    assert [(bytes(r[0]), int(r[1]), bool(r[2]), int(r[3])) for r in rows] == [
        (name_digest("bob"), 1, True, 1),
        (name_digest("alice"), 6, True, 32),
    ]
