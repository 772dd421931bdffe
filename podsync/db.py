"""The SQLite engine: connections, pragmas, migrations, one writer with group commit.

Why statements run on the event loop: SQLite answers a keyed lookup or a page of
50 rows in tens of microseconds, while a hop to a connection thread (aiosqlite)
cost 230-330 µs of thread wake-up on this machine, several times per request. So
the stdlib `sqlite3` module runs each statement on the calling thread. Only the
two steps that can wait do not: a COMMIT (an fsync with durability "full") and a
BEGIN IMMEDIATE that finds another process (the CLI) holding the write lock. Those
run on one commit thread while the loop goes on serving.

`Connection` is the engine-neutral face the store is written against (`fetch_all`,
`fetch_one`, `execute`, `execute_many`, all awaitable), so a second engine with an
async driver (PostgreSQL) offers the same calls; `Database.read()`, `.snapshot()`
and `.write()` are the units of work both engines provide.

Group commit: a COMMIT costs as much as a whole batch's work, so writers that queue
up behind one another share it. Each `write()` block runs inside its own SAVEPOINT
of one group transaction; the block that finds no other writer waiting commits the
group, and every writer of the group returns only after that COMMIT. A block that
fails is rolled back to its savepoint alone; the others of its group still commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from podsync.migrations import MIGRATIONS

T = TypeVar("T")

BUSY_TIMEOUT_MS = 10_000
# At most this many write blocks share one COMMIT, so a steady stream of writers
# cannot hold the first of them back for long.
MAX_GROUP = 32
SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}
# The writer does not checkpoint inside its COMMITs (a checkpoint copies the WAL
# into the database file and syncs it: tens of ms added to one group's answer).
# A checkpointer thread with its own connection runs a PASSIVE checkpoint, which
# never blocks readers or the writer, once the WAL has grown past this size.
CHECKPOINT_WAL_BYTES = 4 * 1024 * 1024
# Prepared statements kept per connection (the default, 128, is enough today; the
# gpodder layer and the PostgreSQL-shaped queries add more).
STATEMENT_CACHE = 256


class SchemaTooNew(Exception):
    """The database was written by a newer podsync than this one."""


class Connection:
    """One database connection as the store sees it: awaitable statements.

    On SQLite a statement runs on the calling thread (`threaded=False`, the event
    loop) or, for the few reads too big for the loop (an OPML export of 200k
    feeds), on a worker thread (`threaded=True`)."""

    dialect = "sqlite"
    __slots__ = ("raw", "threaded")

    def __init__(self, raw: sqlite3.Connection, threaded: bool = False) -> None:
        self.raw = raw
        self.threaded = threaded

    async def _call(self, fn: Callable[[], T]) -> T:
        if self.threaded:
            return await asyncio.to_thread(fn)
        return fn()

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row of one query."""
        return await self._call(lambda: self.raw.execute(sql, params).fetchall())

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of one query, or None."""
        return await self._call(lambda: self.raw.execute(sql, params).fetchone())

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it changed."""
        return await self._call(lambda: self.raw.execute(sql, params).rowcount)

    async def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        return await self._call(lambda: self.raw.executemany(sql, rows).rowcount)


def _connect(path: str, durability: str, *, create: bool = True) -> sqlite3.Connection:
    uri = Path(path).absolute().as_uri() + ("?mode=rwc" if create else "?mode=rw")
    raw = sqlite3.connect(
        uri,
        uri=True,
        isolation_level=None,  # autocommit: the only transactions are the ones we open
        check_same_thread=False,  # the writer commits on the commit thread
        cached_statements=STATEMENT_CACHE,
        timeout=BUSY_TIMEOUT_MS / 1000,
    )
    try:
        raw.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        raw.execute("PRAGMA foreign_keys = ON")
        # The first statement that reads the file: fails on one that is not a database.
        raw.execute(f"PRAGMA synchronous = {SYNCHRONOUS[durability]}")
        # SAVEPOINTs and sorts spill to temp files otherwise (a sub-journal per batch).
        raw.execute("PRAGMA temp_store = MEMORY")
    except BaseException:
        raw.close()
        raise
    return raw


def migrate(raw: sqlite3.Connection) -> int:
    """Run the migrations this database lacks; return the resulting version."""
    current = int(raw.execute("PRAGMA user_version").fetchone()[0])
    if current > len(MIGRATIONS):
        raise SchemaTooNew(
            f"database schema version {current} is newer than this podsync "
            f"understands ({len(MIGRATIONS)}); upgrade podsync"
        )
    for version in range(current + 1, len(MIGRATIONS) + 1):
        step = MIGRATIONS[version - 1]
        raw.execute("BEGIN IMMEDIATE")
        try:
            # Re-check under the write lock: another process may have migrated.
            if int(raw.execute("PRAGMA user_version").fetchone()[0]) >= version:
                raw.execute("ROLLBACK")
                continue
            if isinstance(step, str):
                for statement in _statements(step):
                    raw.execute(statement)
            else:
                step(raw)
            raw.execute(f"PRAGMA user_version = {version}")
            raw.execute("COMMIT")
        except BaseException:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
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


async def _through(step: Awaitable[T]) -> T:
    """Await `step` to its end even when the caller is cancelled meanwhile, then let the
    cancellation through: the writer's state must be known before anyone goes on."""
    task = asyncio.ensure_future(step)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait([task])  # not cancelled by a second cancel of ours
        raise


class Database:
    """One SQLite database file: a writer connection and reader connections."""

    def __init__(self, path: str, durability: str = "full") -> None:
        self.path = path
        self.durability = durability
        self._writer: sqlite3.Connection | None = None
        self._idle_readers: list[sqlite3.Connection] = []
        self._all_readers: list[sqlite3.Connection] = []
        self._committer: ThreadPoolExecutor | None = None
        self._checkpointer: ThreadPoolExecutor | None = None
        self._checkpointing: asyncio.Future[None] | None = None
        self._wal_path = self.path + "-wal"
        self._write_lock = asyncio.Lock()
        self._waiting = 0  # writers blocked on the write lock
        self._group: list[asyncio.Future[None]] | None = None  # open group transaction
        self._background: set[asyncio.Task[None]] = set()
        self.commits = 0  # group transactions committed (for tests, metrics and the bench)

    async def open(self) -> None:
        """Open (creating the file when needed), switch to WAL and migrate."""
        parent = Path(self.path).parent
        if not parent.is_dir():
            raise FileNotFoundError(f"directory {parent} does not exist")
        self._committer = ThreadPoolExecutor(1, thread_name_prefix="podsync-commit")
        self._checkpointer = ThreadPoolExecutor(1, thread_name_prefix="podsync-checkpoint")
        try:
            # Opening may wait for another process's lock (a migration): off the loop.
            self._writer = await self._in_commit_thread(self._open_writer)
            self._idle_readers.append(self._new_reader())
        except BaseException:
            await self.close()
            raise

    def _open_writer(self) -> sqlite3.Connection:
        raw = _connect(self.path, self.durability)
        try:
            raw.execute("PRAGMA journal_mode = WAL").fetchone()
            migrate(raw)
            # On the loop, BEGIN IMMEDIATE must not wait for a lock: it fails at once
            # and is retried on the commit thread with the busy timeout (_begin).
            raw.execute("PRAGMA busy_timeout = 0")
            raw.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer's job
        except BaseException:
            raw.close()
            raise
        return raw

    def _new_reader(self) -> sqlite3.Connection:
        raw = _connect(self.path, self.durability, create=False)
        raw.execute("PRAGMA query_only = ON")
        self._all_readers.append(raw)
        return raw

    async def close(self) -> None:
        for raw in self._all_readers:
            raw.close()
        self._all_readers.clear()
        self._idle_readers.clear()
        if self._writer is not None:
            # Under the write lock: a write block running on the loop (the hourly prune)
            # must not use the connection while the commit thread closes it (a crash,
            # not an error); a group left open for waiting writers is committed first.
            async with self._write_lock:
                writer, self._writer = self._writer, None
                if self._group is not None:
                    group, self._group = self._group, None
                    await self._commit(writer, group)
                await self._in_commit_thread(writer.close)
        if self._committer is not None:
            self._committer.shutdown(wait=True)
            self._committer = None
        if self._checkpointer is not None:
            self._checkpointer.shutdown(wait=True)  # lets a running checkpoint finish
            self._checkpointer = None

    async def __aenter__(self) -> Database:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _in_commit_thread(self, fn: Callable[[], T]) -> T:
        assert self._committer is not None, "database is not open"
        return await asyncio.get_running_loop().run_in_executor(self._committer, fn)

    # Reads ---------------------------------------------------------------------

    def read(self, *, threaded: bool = False) -> _Reading:
        """`async with db.read() as conn`: a reader connection for the block's exclusive
        use (autocommit). With `threaded`, its statements run on a worker thread (for
        reads of many rows). A class, not a generator: every request makes one."""
        return _Reading(self, threaded)

    @asynccontextmanager
    async def snapshot(self, *, threaded: bool = False) -> AsyncIterator[Connection]:
        """A reader inside one read transaction, for queries that must agree."""
        async with self.read(threaded=threaded) as conn:
            await conn.execute("BEGIN")
            try:
                yield conn
            finally:
                await conn.execute("COMMIT")

    # Writes --------------------------------------------------------------------

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Connection]:
        """One atomic write: the block's changes all commit, or none do.

        The block runs in a SAVEPOINT of a group transaction (BEGIN IMMEDIATE) shared
        with the writers queued behind it. When the block exits normally, this
        returns only once the group is committed (and with durability "full",
        synced to disk). When it raises, its own changes are rolled back and the
        exception propagates; the rest of the group is unaffected. A block must not
        await anything but its statements: the write lock is held meanwhile.
        """
        raw = self._writer
        if raw is None:
            raise RuntimeError("database is not open")
        self._waiting += 1
        try:
            await self._write_lock.acquire()
        except BaseException:
            self._waiting -= 1
            self._flush_if_abandoned()
            raise
        self._waiting -= 1
        if self._writer is not raw:  # closed while this writer waited
            self._write_lock.release()
            raise RuntimeError("database is not open")
        committed: asyncio.Future[None] | None = None
        try:
            if self._group is None:
                await _through(self._begin(raw))
            raw.execute("SAVEPOINT write_block")
            try:
                yield Connection(raw)
            except BaseException:
                _undo_block(raw)
                raise
            raw.execute("RELEASE write_block")
            committed = asyncio.get_running_loop().create_future()
            assert self._group is not None, "_begin opened the group"
            self._group.append(committed)
        finally:
            try:
                if self._group is not None and (
                    self._waiting == 0 or len(self._group) >= MAX_GROUP or not raw.in_transaction
                ):
                    group, self._group = self._group, None
                    # A cancelled caller must not leave the others uncommitted, nor let
                    # the next writer in before the COMMIT is through.
                    await _through(self._commit(raw, group))
            finally:
                self._write_lock.release()
        if committed is not None:
            await committed

    async def _begin(self, raw: sqlite3.Connection) -> None:
        """Open the group transaction: BEGIN IMMEDIATE on the loop when the lock is free
        (almost always); when another process holds it, wait for it on the commit
        thread instead. The group is marked open in the same step, so a cancellation
        cannot leave a transaction that no writer will commit."""
        try:
            raw.execute("BEGIN IMMEDIATE")
            self._group = []
            return
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_BUSY:
                raise

        def begin_waiting() -> None:
            raw.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            try:
                raw.execute("BEGIN IMMEDIATE")
            finally:
                raw.execute("PRAGMA busy_timeout = 0")

        await self._in_commit_thread(begin_waiting)
        self._group = []

    async def _commit(self, raw: sqlite3.Connection, group: list[asyncio.Future[None]]) -> None:
        """COMMIT the group transaction and answer each of its writers (never raises)."""
        try:
            if not raw.in_transaction:
                # SQLite rolls a whole transaction back on some errors (disk full, I/O).
                raise sqlite3.OperationalError("the write transaction was rolled back by SQLite")
            await self._in_commit_thread(lambda: raw.execute("COMMIT"))
            self.commits += 1
            self._checkpoint_if_due()
        except Exception as exc:
            if raw.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # report the COMMIT's error
                    await self._in_commit_thread(lambda: raw.execute("ROLLBACK"))
            for future in group:
                if not future.done():
                    future.set_exception(exc)
            return
        for future in group:
            if not future.done():
                future.set_result(None)

    def _checkpoint_if_due(self) -> None:
        """Start a PASSIVE checkpoint on the checkpointer thread when the WAL has grown
        past CHECKPOINT_WAL_BYTES and none is running."""
        if self._checkpointing is not None and not self._checkpointing.done():
            return
        try:
            if os.stat(self._wal_path).st_size < CHECKPOINT_WAL_BYTES:
                return
        except OSError:
            return
        if self._checkpointer is not None:
            loop = asyncio.get_running_loop()
            self._checkpointing = loop.run_in_executor(self._checkpointer, self._checkpoint)

    def _checkpoint(self) -> None:
        try:
            raw = _connect(self.path, self.durability, create=False)
        except sqlite3.Error:
            return  # the next commit tries again
        try:
            raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:
            pass  # busy or failing now: the next commit tries again
        finally:
            raw.close()

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


class _Reading:
    __slots__ = ("_db", "_raw", "_threaded")

    def __init__(self, db: Database, threaded: bool) -> None:
        self._db = db
        self._threaded = threaded
        self._raw: sqlite3.Connection | None = None

    async def __aenter__(self) -> Connection:
        db = self._db
        if db._writer is None:
            raise RuntimeError("database is not open")
        self._raw = db._idle_readers.pop() if db._idle_readers else db._new_reader()
        return Connection(self._raw, self._threaded)

    async def __aexit__(self, *exc: object) -> None:
        raw, self._raw = self._raw, None
        if raw is not None and raw in self._db._all_readers:  # not closed meanwhile
            self._db._idle_readers.append(raw)


def _undo_block(raw: sqlite3.Connection) -> None:
    """Roll a failed write block back to its savepoint. Never raises an error of its
    own over the block's: when SQLite has ended the whole transaction (it does on
    some errors, disk full among them), the group's COMMIT step reports that to the
    other writers of the group."""
    if raw.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            raw.execute("ROLLBACK TO write_block")
            raw.execute("RELEASE write_block")
