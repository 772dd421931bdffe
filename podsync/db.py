"""The SQLite connection layer: pragmas, migrations, one writer, a few readers.

Writes go through `Database.write()`, which serialises writers inside this process
with a lock and across processes (the CLI beside a running server) with
`BEGIN IMMEDIATE` and a busy timeout. Connections run in autocommit mode
(`isolation_level=None`) so that the only transactions are the ones we open.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from podsync.migrations import MIGRATIONS

BUSY_TIMEOUT_MS = 10_000
READERS = 2
SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}


class SchemaTooNew(Exception):
    """The database was written by a newer podsync than this one."""


async def _connect(path: str, durability: str) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        await conn.execute("PRAGMA foreign_keys = ON")
        # The first statement that reads the file: fails on one that is not a database.
        await conn.execute(f"PRAGMA synchronous = {SYNCHRONOUS[durability]}")
    except BaseException:
        # An unclosed aiosqlite connection keeps a non-daemon thread: the process hangs.
        await conn.close()
        raise
    return conn


async def migrate(conn: aiosqlite.Connection) -> int:
    """Run the migrations this database lacks; return the resulting version."""
    async with conn.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    current = int(row[0]) if row else 0
    if current > len(MIGRATIONS):
        raise SchemaTooNew(
            f"database schema version {current} is newer than this podsync "
            f"understands ({len(MIGRATIONS)}); upgrade podsync"
        )
    for version in range(current + 1, len(MIGRATIONS) + 1):
        script = MIGRATIONS[version - 1]
        await conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-check under the write lock: another process may have migrated.
            async with conn.execute("PRAGMA user_version") as cur:
                row = await cur.fetchone()
            if row and int(row[0]) >= version:
                await conn.execute("ROLLBACK")
                continue
            for statement in _statements(script):
                await conn.execute(statement)
            await conn.execute(f"PRAGMA user_version = {version}")
            await conn.execute("COMMIT")
        except BaseException:
            await conn.execute("ROLLBACK")
            raise
    return len(MIGRATIONS)


async def _rollback(conn: aiosqlite.Connection) -> None:
    """Roll back whatever transaction the statements queued before this one left open.

    aiosqlite runs statements in order on one thread, so this ROLLBACK runs after a
    BEGIN or COMMIT a cancelled task had queued; "no transaction is active" then
    means there is nothing to undo.
    """
    try:
        await conn.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "no transaction is active" not in str(exc):
            raise


def _statements(script: str) -> list[str]:
    """Split a migration script into complete statements (sqlite3.complete_statement)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


class Database:
    """One SQLite database file: a writer connection and a small pool of readers."""

    def __init__(self, path: str, durability: str = "full", readers: int = READERS) -> None:
        self.path = path
        self.durability = durability
        self._reader_count = readers
        self._writer: aiosqlite.Connection | None = None
        self._readers: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._all_readers: list[aiosqlite.Connection] = []
        self._write_lock = asyncio.Lock()

    async def open(self) -> None:
        """Open (creating the file when needed), switch to WAL and migrate."""
        parent = Path(self.path).parent
        if not parent.is_dir():
            raise FileNotFoundError(f"directory {parent} does not exist")
        try:
            self._writer = await _connect(self.path, self.durability)
            async with self._writer.execute("PRAGMA journal_mode = WAL") as cur:
                await cur.fetchone()
            await migrate(self._writer)
            for _ in range(self._reader_count):
                reader = await _connect(self.path, self.durability)
                await reader.execute("PRAGMA query_only = ON")
                self._all_readers.append(reader)
                self._readers.put_nowait(reader)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        # aiosqlite runs a non-daemon thread per connection: every one must be closed.
        for reader in self._all_readers:
            await reader.close()
        self._all_readers.clear()
        self._readers = asyncio.Queue()
        if self._writer is not None:
            await self._writer.close()
            self._writer = None

    async def __aenter__(self) -> Database:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction: BEGIN IMMEDIATE, then COMMIT, or ROLLBACK on error.

        When the block exits normally, the transaction is committed (and with
        durability "full", synced to disk).
        """
        if self._writer is None:
            raise RuntimeError("database is not open")
        async with self._write_lock:
            conn = self._writer
            try:
                await conn.execute("BEGIN IMMEDIATE")
                yield conn
                await conn.execute("COMMIT")
            except BaseException:
                # Never leave the shared writer inside a transaction for the next caller:
                # not when COMMIT fails (disk full, I/O error), nor when the task is
                # cancelled while BEGIN or COMMIT is still queued on the connection's
                # thread (asking `in_transaction` then gives the wrong answer).
                await _rollback(conn)
                raise

    @asynccontextmanager
    async def read(self) -> AsyncIterator[aiosqlite.Connection]:
        """A reader connection for the block's exclusive use (autocommit)."""
        if not self._all_readers:
            raise RuntimeError("database is not open")
        conn = await self._readers.get()
        try:
            yield conn
        finally:
            self._readers.put_nowait(conn)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[aiosqlite.Connection]:
        """A reader inside one read transaction, for queries that must agree."""
        async with self.read() as conn:
            await conn.execute("BEGIN")
            try:
                yield conn
            finally:
                await conn.execute("COMMIT")
