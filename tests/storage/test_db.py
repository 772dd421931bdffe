"""The SQLite layer: pragmas, migrations, one writer beside other processes."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.storage.errors import SchemaTooNew
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.storage.sqlite import Database
from podsync.storage.sqlite_connection import BUSY_TIMEOUT_MS
from podsync.store import Connection, meta, users
from tests.conftest import PASSWORD, config_file, login, run_cli


async def _pragma(conn: Connection, name: str) -> Any:
    row = await conn.fetch_one(f"PRAGMA {name}")
    assert row is not None
    return row[0]


@pytest.mark.parametrize(("durability", "synchronous"), [("full", 2), ("normal", 1)])
async def test_every_connection_has_the_pragmas(
    tmp_path: Path, durability: str, synchronous: int
) -> None:
    async with Database(str(tmp_path / "p.db"), durability) as db:
        connections = []
        async with db.write() as writer:
            connections.append(writer)
            async with db.read() as first, db.read() as second:
                connections += [first, second]
                for conn in connections:
                    assert await _pragma(conn, "journal_mode") == "wal"
                    assert await _pragma(conn, "foreign_keys") == 1
                    assert await _pragma(conn, "synchronous") == synchronous
                    assert await _pragma(conn, "temp_store") == 2  # MEMORY
                # The writer never waits on the event loop: a busy BEGIN is retried on
                # the commit thread with the timeout (test_cli_beside_server proves it).
                assert await _pragma(writer, "busy_timeout") == 0
                assert await _pragma(first, "busy_timeout") == BUSY_TIMEOUT_MS
                assert await _pragma(first, "query_only") == 1
        assert len({id(c.raw) for c in connections}) == 3


async def test_migrations_run_once_and_record_the_version(tmp_path: Path) -> None:
    path = str(tmp_path / "p.db")
    async with Database(path) as db, db.write() as conn:
        assert await _pragma(conn, "user_version") == len(MIGRATIONS)
        await conn.execute("INSERT INTO meta (key, value) VALUES ('marker', 'kept')")
    # Re-running migration 1 would fail (its tables exist); re-opening must not.
    async with Database(path) as db, db.read() as conn:
        assert await _pragma(conn, "user_version") == len(MIGRATIONS)
        assert await meta.get(conn, "marker") == "kept"


async def test_newer_schema_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(SchemaTooNew, match="newer than this podsync understands"):
        await Database(str(path)).open()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def test_cli_refuses_a_newer_schema(config: Config) -> None:
    with closing(sqlite3.connect(config.database.path)) as conn:
        conn.execute("PRAGMA user_version = 99")
    result = run_cli(config, "user", "list")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: database schema version 99 is newer")


def test_cli_reports_a_missing_directory(config: Config, tmp_path: Path) -> None:
    (tmp_path / "podsync.toml").write_text('[database]\npath = "no/such/dir/p.db"\n')
    result = run_cli(config, "db", "migrate")
    assert result.exit_code == 1
    assert result.stderr == f"Error: directory {tmp_path / 'no/such/dir'} does not exist\n"


async def test_failed_write_rolls_back(tmp_path: Path) -> None:
    async with Database(str(tmp_path / "p.db")) as db:
        with pytest.raises(RuntimeError):
            async with db.write() as conn:
                await conn.execute("INSERT INTO meta (key, value) VALUES ('x', '1')")
                raise RuntimeError("abort")
        async with db.read() as conn:
            assert await meta.get(conn, "x") is None
        async with db.write() as conn:  # the writer is usable again
            await conn.execute("INSERT INTO meta (key, value) VALUES ('x', '2')")
        async with db.read() as conn:
            assert await meta.get(conn, "x") == "2"


async def _user(db: Database) -> int:
    async with db.write() as conn:
        await conn.execute(
            "INSERT INTO users (name, password_hash, created_at) VALUES ('u', 'x', 0)"
        )
        row = await conn.fetch_one("SELECT id FROM users WHERE name = 'u'")
    return int(row[0])


async def test_concurrent_writes_are_serialised(tmp_path: Path) -> None:
    async with Database(str(tmp_path / "p.db")) as db:
        user_id = await _user(db)

        async def reserve() -> int:
            async with db.write() as conn:
                first = await users.next_change_seqs(conn, user_id, 3)
                await asyncio.sleep(0)
                return first

        firsts = await asyncio.gather(*(reserve() for _ in range(20)))
    assert sorted(firsts) == list(range(1, 60, 3))


async def test_two_databases_on_one_file_write_in_turn(tmp_path: Path) -> None:
    path = str(tmp_path / "p.db")
    async with Database(path) as first, Database(path) as second:
        user_id = await _user(first)

        async def reserve(db: Database) -> int:
            async with db.write() as conn:
                return await users.next_change_seqs(conn, user_id, 1)

        results = await asyncio.gather(*(reserve(db) for db in [first, second] * 10))
    assert sorted(results) == list(range(1, 21))


async def test_cli_user_add_while_the_app_holds_the_database(
    api: TestClient[Any, Any], config: Config
) -> None:
    assert (await api.get("/healthz")).status == 200
    await login(api, "alice")
    result = await asyncio.to_thread(
        run_cli, config, "user", "add", "dave", "--password-stdin", input=PASSWORD + "\n"
    )
    assert result.exit_code == 0, result.output
    assert "access_token" in await login(api, "dave")


async def test_cancelling_a_write_at_any_point_leaves_the_writer_clean(tmp_path: Path) -> None:
    """A cancelled request or background task must re-raise CancelledError (not an
    SQLite error) and never leave the shared writer inside a transaction."""
    async with Database(str(tmp_path / "p.db")) as db:
        committed = 0  # tasks that returned normally
        for delay in range(40):
            key = f"k{delay}"

            async def insert(key: str = key) -> None:
                async with db.write() as conn:
                    await conn.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (key,))

            task = asyncio.create_task(insert())
            for _ in range(delay % 8):
                await asyncio.sleep(0)
            await asyncio.sleep(0.0002 * (delay // 8))
            task.cancel()
            try:
                await task
                committed += 1
            except asyncio.CancelledError:
                pass
            async with db.write() as conn:  # raises if the writer is still in a transaction
                await conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?, 'after')", (key + "x",)
                )
            assert not conn.raw.in_transaction
        async with db.read() as conn:
            counts = dict(
                await conn.fetch_all(
                    "SELECT value, count(*) FROM meta WHERE key LIKE 'k%' GROUP BY value"
                )
            )
    assert counts["after"] == 40
    # A task cancelled while its COMMIT was already queued has committed all the same.
    assert committed <= counts.get("1", 0) <= 40


@pytest.mark.parametrize("command", [["user", "list"], ["serve", "--port", "0"]])
def test_a_file_that_is_not_a_database_is_one_error_line(
    config: Config, tmp_path: Path, command: list[str]
) -> None:
    Path(config.database.path).write_bytes(b"this is not an SQLite database, " * 8)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
    # A connection left open keeps a non-daemon thread alive: the process would hang.
    result = subprocess.run(
        [sys.executable, "-m", "podsync", "--config", str(config_file(config)), *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"Error: database {config.database.path}: file is not a database"
    )
    assert "Traceback" not in result.stderr
