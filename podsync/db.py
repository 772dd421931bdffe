"""The SQLite connection layer: pragmas, migrations, one writer, a few readers.

Writes go through `Database.write()`, which serialises writers inside this process
with a lock and across processes (the CLI beside a running server) with
`BEGIN IMMEDIATE` and a busy timeout. Connections run in autocommit mode
(`isolation_level=None`) so that the only transactions are the ones we open.

Group commit: a COMMIT (an fsync with durability "full") costs as much as a whole
batch's work, so writers that queue up behind one another share it. Each
`write()` block runs inside its own SAVEPOINT of one group transaction; the block
that finds no other writer waiting commits the group, and every writer of the
group returns only after that COMMIT. A block that fails is rolled back to its
savepoint alone; the others of its group still commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

import aiosqlite

from podsync.errors import Unavailable
from podsync.migrations import MIGRATIONS

T = TypeVar("T")
log = logging.getLogger("podsync.db")

BUSY_TIMEOUT_MS = 10_000
# At most this many write blocks share one COMMIT, so a steady stream of writers
# cannot hold the first of them back for long.
MAX_GROUP = 32
# Readers in the pool. A request holds one for its bearer-token lookup and again for
# its page (a read transaction of a few queries); with only two, requests queued for
# a reader and the list p99 under 8 concurrent clients was ~50 ms; four halve it
# (bench/load.py). Each costs a thread and a small page cache.
READERS = 4
SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}


# SQLite primary result codes (sqlite3.h) that mean "not now" rather than a bug.
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY, _SQLITE_FULL = 5, 6, 8, 13
RETRY_AFTER_LOCKED = 1  # another writer: seconds, at most
RETRY_AFTER_STORAGE = 60  # an admin has to free space or remount: minutes


def owner_only(path: str) -> None:
    """Create the database file readable by its owner only (0600, whatever the umask),
    or take group and other access away from an existing one and its -wal/-shm: they
    hold password hashes and the token-signing secret. SQLite creates -wal and -shm
    with the database file's mode, so they follow."""
    # Exists already, or cannot be created (read-only, no such directory): the
    # connection that follows reports what is wrong in SQLite's words.
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.fchmod(fd, 0o600)  # the umask may have taken bits from 0600 too
        finally:
            os.close(fd)
    for name in (path, f"{path}-wal", f"{path}-shm"):
        try:
            mode = os.stat(name).st_mode & 0o777
            if mode & 0o077:
                os.chmod(name, mode & 0o700)
                log.warning("%s was open to others (mode %o), now %o", name, mode, mode & 0o700)
        except FileNotFoundError:
            pass
        except OSError as exc:  # a read-only file system: opening will say more
            log.warning("cannot restrict the mode of %s: %s", name, exc.strerror)


class SchemaTooNew(Exception):
    """The database was written by a newer podsync than this one."""


def unavailable_error(exc: BaseException) -> Unavailable | None:
    """The Unavailable (503) a SQLite error stands for, or None when it is not one of
    the "not now" conditions: locked past the busy timeout, disk full, read-only.
    The one place that reads SQLite's result codes, for every engine-facing layer."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(exc, sqlite3.Error) or not isinstance(code, int):
        return None
    primary = code & 0xFF  # extended codes keep the primary one in the low byte
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return Unavailable(
            f"the database is locked by another writer (waited {BUSY_TIMEOUT_MS // 1000} s); "
            f"try again shortly",
            RETRY_AFTER_LOCKED,
        )
    if primary == _SQLITE_FULL:
        return Unavailable("the disk holding the database is full", RETRY_AFTER_STORAGE)
    if primary == _SQLITE_READONLY:
        return Unavailable("the database is read-only", RETRY_AFTER_STORAGE)
    return None


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


async def _run(conn: aiosqlite.Connection, sql: str) -> None:
    """Run one statement of the writer's own; when the caller is cancelled meanwhile,
    wait until the statement is through before the cancellation goes on. aiosqlite
    runs it in its thread whether or not anyone still awaits it, and runs a
    connection's statements in order, so a barrier query behind it tells when. The
    writer's state (inside a transaction or not) is then known before the next
    step, or the next writer, looks at it."""
    try:
        await conn.execute(sql)
    except asyncio.CancelledError:
        await asyncio.shield(conn.execute("SELECT 1"))
        raise


async def _through(step: Awaitable[T]) -> T:
    """Await `step` (a coroutine of several statements) to its end even when the
    caller is cancelled meanwhile, then let the cancellation through."""
    task = asyncio.ensure_future(step)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])  # not cancelled by a second cancel of ours
        raise


async def _undo_block(conn: aiosqlite.Connection) -> None:
    """Roll a failed write block back to its savepoint. Never raises an error of its
    own over the block's: when SQLite has ended the whole transaction (it does on
    some errors, disk full among them), the group's COMMIT step reports that to the
    other writers of the group."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            await _run(conn, "ROLLBACK TO write_block")
            await _run(conn, "RELEASE write_block")


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
        self._waiting = 0  # writers blocked on the write lock
        self._group: list[asyncio.Future[None]] | None = None  # open group transaction
        self._background: set[asyncio.Task[None]] = set()
        self.commits = 0  # group transactions committed (for tests and the bench)
        self._ended_by: sqlite3.Error | None = None  # why SQLite ended the open group
        # Set when a write failed because the database is full or read-only, cleared
        # when one commits again: /healthz reports it.
        self.write_failure: Unavailable | None = None

    async def open(self) -> None:
        """Open (creating the file when needed), switch to WAL and migrate."""
        parent = Path(self.path).parent
        if not parent.is_dir():
            raise FileNotFoundError(f"directory {parent} does not exist")
        owner_only(self.path)
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
        """One atomic write (see `_write`). SQLite's "not now" errors (locked, full,
        read-only) leave as `Unavailable`; a full or read-only database is remembered
        in `write_failure` until a write commits again."""
        try:
            async with self._write() as conn:
                yield conn
        except sqlite3.Error as exc:
            unavailable = unavailable_error(exc)
            if unavailable is None:
                raise
            if unavailable.retry_after == RETRY_AFTER_STORAGE:
                self.write_failure = unavailable
            log.warning("a write to %s failed: %s (%s)", self.path, unavailable.reason, exc)
            raise unavailable from exc
        self.write_failure = None

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        """One atomic write: the block's changes all commit, or none do.

        The block runs in a SAVEPOINT of a group transaction (BEGIN IMMEDIATE) shared
        with the writers queued behind it. When the block exits normally, this
        returns only once the group is committed (and with durability "full",
        synced to disk). When it raises, its own changes are rolled back and the
        exception propagates; the rest of the group is unaffected.
        """
        if self._writer is None:
            raise RuntimeError("database is not open")
        conn = self._writer
        self._waiting += 1
        try:
            await self._write_lock.acquire()
        except BaseException:
            self._waiting -= 1
            self._flush_if_abandoned()
            raise
        self._waiting -= 1
        committed: asyncio.Future[None] | None = None
        try:
            if self._group is None:
                self._group = []
                self._ended_by = None
                await _run(conn, "BEGIN IMMEDIATE")
            await _run(conn, "SAVEPOINT write_block")
            try:
                yield conn
            except BaseException as exc:
                if isinstance(exc, sqlite3.Error) and not conn.in_transaction:
                    self._ended_by = exc  # SQLite ended the group; say why to the others
                await _undo_block(conn)
                raise
            await _run(conn, "RELEASE write_block")
            committed = asyncio.get_running_loop().create_future()
            self._group.append(committed)
        finally:
            try:
                if self._group is not None and (
                    self._waiting == 0 or len(self._group) >= MAX_GROUP or not conn.in_transaction
                ):
                    group, self._group = self._group, None
                    # A cancelled caller must not leave the others uncommitted, nor let
                    # the next writer in before the COMMIT is through.
                    await _through(self._commit(conn, group))
            finally:
                self._write_lock.release()
        if committed is not None:
            await committed

    async def _commit(self, conn: aiosqlite.Connection, group: list[asyncio.Future[None]]) -> None:
        """COMMIT the group transaction and answer each of its writers (never raises)."""
        try:
            if not conn.in_transaction:
                # SQLite rolls a whole transaction back on some errors (disk full, I/O).
                ended = sqlite3.OperationalError(
                    f"the write transaction was rolled back by SQLite: {self._ended_by}"
                )
                # The same result code, so the other writers get the same 503.
                code = getattr(self._ended_by, "sqlite_errorcode", None)
                if isinstance(code, int):
                    ended.sqlite_errorcode = code
                raise ended
            await conn.execute("COMMIT")
            self.commits += 1
        except Exception as exc:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # report the COMMIT's error
                    await conn.execute("ROLLBACK")
            for future in group:
                if not future.done():
                    future.set_exception(exc)
            return
        for future in group:
            if not future.done():
                future.set_result(None)

    def _flush_if_abandoned(self) -> None:
        """A writer gave up waiting for the lock: if the writers before it left the group
        open for it, and nobody else will come, commit the group in the background."""
        if self._group is not None and self._waiting == 0 and not self._write_lock.locked():
            task = asyncio.get_running_loop().create_task(self._flush())
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _flush(self) -> None:
        async with self._write_lock:
            if self._group is not None and self._writer is not None:
                group, self._group = self._group, None
                await self._commit(self._writer, group)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[aiosqlite.Connection]:
        """A reader connection for the block's exclusive use (autocommit)."""
        if not self._all_readers:
            raise RuntimeError("database is not open")
        conn = await self._readers.get()
        try:
            yield conn
        except sqlite3.Error as exc:
            unavailable = unavailable_error(exc)
            if unavailable is None:
                raise
            raise unavailable from exc
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
