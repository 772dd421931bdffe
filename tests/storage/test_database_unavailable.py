"""A database that cannot take a write now is a 503 with Retry-After that says why
(issue 10 items 6 and 7): locked past the busy timeout, full, read-only. A server
on a database it cannot write refuses to start; /healthz answers 503 while writes
fail. OPML import writes in transactions of at most 1000 feeds.

Every condition is real: a lock held by another connection, a tmpfs filled to the
last byte, a read-only bind mount, or SQLite's own limits (max_page_count,
query_only) raising SQLite's own errors. Nothing is mocked."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

import podsync.storage.sqlite
import podsync.storage.sqlite_connection
from podsync.config import Config, load_config
from podsync.errors import Unavailable
from podsync.opml import OutlineFeed
from podsync.services.auth import load_secret_key
from podsync.services.opml_io import IMPORT_CHUNK, OpmlService
from podsync.services.sync import SyncService
from podsync.storage.sqlite import Database
from podsync.store import users
from podsync.web.app import create_app
from tests.conftest import MakeConfig, bearer, login, with_accounts
from tests.support.fs_conditions import fill, read_only_view, small_disk
from tests.support.sync_helpers import action

LONG = "x" * 1900
PODSYNC = (sys.executable, "-m", "podsync")


@contextlib.asynccontextmanager
async def write_lock_held(path: str) -> AsyncIterator[None]:
    """Another process's writer in the middle of a transaction (the CLI, say). Taken
    in a thread: the app's own writes in flight need the event loop to finish."""
    other = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
    try:
        await asyncio.to_thread(other.execute, "BEGIN IMMEDIATE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


async def test_a_database_locked_past_the_busy_timeout_is_a_503_with_retry_after(
    client: TestClient[Any, Any], alice: str, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer's busy timeout is read when a connection opens: reopen with 0.2 s.
    for module in (podsync.storage.sqlite, podsync.storage.sqlite_connection):
        monkeypatch.setattr(module, "BUSY_TIMEOUT_MS", 200)
    async with Database(config.database.path) as db, write_lock_held(config.database.path):
        with pytest.raises(Unavailable) as raised:
            async with db.write() as conn:
                await conn.execute("UPDATE meta SET value = value")
    assert raised.value.retry_after == 1
    assert "locked" in raised.value.reason

    # Through the API (whose writer opened with the 10 s default: wait it out once).
    for module in (podsync.storage.sqlite, podsync.storage.sqlite_connection):
        monkeypatch.setattr(module, "BUSY_TIMEOUT_MS", 200)
    sent = [action(feed_url="https://a.example/feed")]
    fresh = await TestClient(TestServer(create_app(config))).__aenter__()
    try:
        async with write_lock_held(config.database.path):
            response = await fresh.post(
                "/api/v1/sync", json={"requests": sent}, headers=bearer(alice)
            )
            body = await response.json()
        assert response.status == 503, body
        assert response.headers["Retry-After"] == "1"
        assert body["error"] == "Service unavailable"
        assert "locked" in body["description"]
        # Nothing was applied: the same batch now applies.
        retry = await fresh.post("/api/v1/sync", json={"requests": sent}, headers=bearer(alice))
        assert (await retry.json())["results"][0]["status"] == "applied"
    finally:
        await fresh.close()


async def test_sqlite_full_and_read_only_errors_are_unavailable_at_the_db_layer(
    config: Config,
) -> None:
    # The nearest layer, anywhere: SQLite's own SQLITE_FULL and SQLITE_READONLY.
    async with Database(config.database.path) as db:
        with pytest.raises(Unavailable, match="disk holding the database is full") as full:
            async with db.write() as conn:
                await conn.execute("PRAGMA max_page_count = 1")
                await conn.execute("CREATE TABLE filler (x)")
                await conn.execute_many("INSERT INTO filler VALUES (?)", [(LONG,)] * 50)
        assert full.value.retry_after == 60
        assert db.write_failure is not None
        async with db.write() as conn:  # the next write that commits clears it
            await conn.execute("PRAGMA max_page_count = 1073741823")
        assert db.write_failure is None
        with pytest.raises(Unavailable, match="read-only"):
            async with db.write() as conn:
                await conn.execute("PRAGMA query_only = ON")
                try:
                    await conn.execute("UPDATE meta SET value = value")
                finally:
                    await conn.execute("PRAGMA query_only = OFF")


async def test_a_full_disk_is_a_503_and_healthz_says_so_until_space_is_freed(
    aiohttp_client: Any, make_config: MakeConfig, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        config = config_at(tmp_path, disk / "podsync.db")
        await with_accounts(config, lambda a: a.add_user("alice", "correct horse battery"))
        async with TestClient(TestServer(create_app(config))) as client:
            token = (await login(client))["access_token"]
            assert (await client.get("/healthz")).status == 200
            filler = fill(disk)
            feeds = [action(feed_url=f"https://a.example/{i}/{LONG}") for i in range(30)]
            response = await client.post(
                "/api/v1/sync", json={"requests": feeds}, headers=bearer(token)
            )
            body = await response.json()
            assert response.status == 503, body
            assert response.headers["Retry-After"] == "60"
            assert body["description"] == "the disk holding the database is full"
            health = await client.get("/healthz")
            assert health.status == 503
            assert (await health.json())["reason"] == "the disk holding the database is full"
            filler.unlink()
            assert (await client.get("/healthz")).status == 200
            again = await client.post(
                "/api/v1/sync", json={"requests": feeds}, headers=bearer(token)
            )
            assert again.status == 200


def config_at(tmp_path: Path, database: Path) -> Config:
    """A config (written to tmp_path/podsync.toml) whose database is `database`."""
    path = tmp_path / "podsync.toml"
    path.write_text(
        f'[database]\npath = "{database}"\n[log]\naccess_log = false\n'
        "[feeds]\nfetch_metadata = false\n"
    )
    return load_config(path, environ={})


def _database_left_open(directory: Path) -> sqlite3.Connection:
    """A database with its -wal and -shm present, as while another process has it open."""
    directory.mkdir()
    conn = sqlite3.connect(directory / "podsync.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE keep_open (x)")
    return conn


def test_a_server_refuses_to_start_on_a_read_only_database(tmp_path: Path) -> None:
    # Item 7: on a read-only database the server started, said healthy, and answered
    # every write with a 500.
    writable = tmp_path / "rw"
    asyncio.run(_create(_path(writable)))
    holder = sqlite3.connect(_path(writable), isolation_level=None)  # keeps -wal/-shm
    holder.execute("SELECT 1 FROM meta").fetchall()
    try:
        with read_only_view(writable, tmp_path / "ro") as view:
            config = config_at(tmp_path, view / "podsync.db")
            env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
            result = subprocess.run(
                [*PODSYNC, "--config", str(tmp_path / "podsync.toml"), "serve", "--port", "0"],
                capture_output=True,
                text=True,
                timeout=60,
                env=env,
                check=False,
            )
            assert result.returncode == 1, result.stderr
            last = result.stderr.strip().splitlines()[-1]
            assert last == (
                f"Error: database {config.database.path} cannot be written: "
                "the database is read-only"
            )
    finally:
        holder.close()


async def _create(path: str) -> None:
    """A database a server has run on before: migrated, its secret key stored."""
    async with Database(path) as db:
        await load_secret_key(db, "")


def _path(directory: Path) -> str:
    directory.mkdir(exist_ok=True)
    return str(directory / "podsync.db")


async def test_opml_import_writes_in_transactions_of_at_most_1000_feeds(
    config: Config, create_user: Any
) -> None:
    await create_user("alice")
    feeds = [OutlineFeed(f"https://feeds.example/{i}", None) for i in range(2 * IMPORT_CHUNK + 5)]
    async with Database(config.database.path) as db:
        async with db.read() as conn:
            user = await users.require_by_name(conn, "alice")
        service = OpmlService(db, SyncService(db, config.sync))
        before = db.commits
        report = await service.import_feeds(user, feeds)
        assert report.added == len(feeds)
        assert db.commits - before == 3
        # Run again (as after an interruption): everything is already there.
        again = await service.import_feeds(user, feeds)
        assert again.already_subscribed == len(feeds)
