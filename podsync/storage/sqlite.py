"""The SQLite engine: reader connections, one writer with group commit.

Why statements run on the event loop: SQLite answers a keyed lookup or a page of
50 rows in tens of microseconds, while a hop to a connection thread (aiosqlite)
cost 230-330 µs of thread wake-up on this machine, several times per request. So
the stdlib `sqlite3` module runs each statement on the calling thread, but for a
COMMIT (an fsync with durability "full") and a BEGIN IMMEDIATE that finds another
process (the CLI) holding the write lock, which can wait: those run on one commit
thread; and a read or write opened `threaded` runs its statements on a worker thread.

`Database.read()`, `.snapshot()` and `.write()` are the units of work both engines
provide (`podsync.storage.engine`); connections and pragmas are in
`sqlite_connection`, checkpoints in `sqlite_checkpoint`, the schema steps in
`migrations.sqlite`.

Group commit: a COMMIT costs as much as a whole batch's work, so writers that queue
up behind one another share it. Each `write()` block runs inside its own SAVEPOINT
of one group transaction; the block that finds no other writer waiting commits the
group, and every writer of the group returns only after that COMMIT. A block that
fails is rolled back to its savepoint alone; the others of its group still commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from podsync.errors import Unavailable
from podsync.storage.errors import RETRY_AFTER_STORAGE, unavailable_error
from podsync.storage.migrations.sqlite import migrate
from podsync.storage.sqlite_checkpoint import Checkpointer
from podsync.storage.sqlite_connection import (
    BUSY_TIMEOUT_MS,
    WRITER_SPILL_PAGES,
    Connection,
    connect,
    owner_only,
)
from podsync.storage.sqlite_write_turn import WriteTurn
from podsync.storage.through import through

T = TypeVar("T")
log = logging.getLogger("podsync.db")

# At most this many write blocks share one COMMIT, so a steady stream of writers
# cannot hold the first of them back for long.
MAX_GROUP = 32
# Reader connections kept open between uses. A burst of concurrent reads opens
# more, and they close as the burst ends: each keeps its own page cache
# (`sqlite_connection.CACHE_KIB`) and prepared statements, so a pool that only ever
# grew held the memory of the busiest moment for good.
READERS_KEPT = 4


class Database:
    """One SQLite database file: a writer connection and reader connections."""

    def __init__(
        self,
        path: str,
        durability: str = "full",
        checkpoints: str = "own",
        write_turn: str = "",
    ) -> None:
        """`checkpoints`: who checkpoints the log (`sqlite_checkpoint.Checkpointer`'s
        modes): "own" for a process alone on the file, "watch" for the leader of
        several workers, "none" for the others. `write_turn`: the lock file the
        workers of one server take turns on (`sqlite_write_turn`); "" alone."""
        self.path = path
        self.durability = durability
        self.checkpoints = checkpoints
        self._turn = WriteTurn(write_turn) if write_turn else None
        self._writer: sqlite3.Connection | None = None
        self._idle_readers: list[sqlite3.Connection] = []
        self._all_readers: list[sqlite3.Connection] = []
        self._committer: ThreadPoolExecutor | None = None
        self._checkpointer: Checkpointer | None = None
        self._write_lock = asyncio.Lock()
        self._waiting = 0  # writers blocked on the write lock
        self._group: list[asyncio.Future[None]] | None = None  # open group transaction
        self._background: set[asyncio.Task[None]] = set()
        self.commits = 0  # group transactions committed (for tests, metrics and the bench)
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
        self._committer = ThreadPoolExecutor(1, thread_name_prefix="podsync-commit")
        self._checkpointer = Checkpointer(self.path, self.durability, mode=self.checkpoints)
        try:
            if self._turn is not None:
                self._turn.open()
            # Opening may wait for another process's lock (a migration): off the loop.
            self._writer = await self._in_commit_thread(self._open_writer)
            self._idle_readers.append(self._new_reader())
            self._checkpointer.watch()
        except BaseException:
            await self.close()
            raise

    def _open_writer(self) -> sqlite3.Connection:
        # Migrations on a connection of their own: a connection keeps the statements
        # it ran, and the writer would keep a new database's schema steps for good.
        with contextlib.closing(connect(self.path, self.durability)) as steps:
            steps.execute("PRAGMA journal_mode = WAL").fetchone()
            migrate(steps)
        raw = connect(self.path, self.durability)
        try:
            # On the loop, BEGIN IMMEDIATE must not wait for a lock: it fails at once
            # and is retried on the commit thread with the busy timeout (_begin).
            raw.execute("PRAGMA busy_timeout = 0")
            raw.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer's job
            raw.execute(f"PRAGMA cache_spill = {WRITER_SPILL_PAGES}")
        except BaseException:
            raw.close()
            raise
        return raw

    def _new_reader(self) -> sqlite3.Connection:
        raw = connect(self.path, self.durability, create=False)
        raw.execute("PRAGMA query_only = ON")
        self._all_readers.append(raw)
        return raw

    async def close(self) -> None:
        """Close every connection once nothing runs on it: readers in use are closed
        when their block ends; the writer after the write under way and its group."""
        for raw in self._idle_readers:
            raw.close()
            self._all_readers.remove(raw)
        self._idle_readers.clear()
        if self._writer is not None:
            async with self._write_lock:
                writer = self._writer
                if writer is not None:
                    if self._group is not None:  # writers await this group's COMMIT
                        group, self._group = self._group, None
                        await through(self._commit(writer, group))
                    self._writer = None
                    await through(self._in_commit_thread(writer.close))
        if self._committer is not None:
            self._committer.shutdown(wait=True)
            self._committer = None
        if self._checkpointer is not None:
            self._checkpointer.close()  # lets a running checkpoint finish
            self._checkpointer = None
        if self._turn is not None:
            self._turn.close()

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
        """`async with db.read() as conn`: a reader for the block's own use (autocommit);
        `threaded`: its statements on a worker thread. A class: every request makes one."""
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
    async def write(
        self, *, user: int | None = None, threaded: bool = False
    ) -> AsyncIterator[Connection]:
        """One atomic write (see `_write`; `user` is PostgreSQL's: one writer serialises
        every write here). `threaded`: its statements on a worker thread, off the loop.
        SQLite's "not now" errors (locked, full, read-only) leave as `Unavailable`; a full
        or read-only database is kept in `write_failure` until a write commits."""
        try:
            async with self._write(threaded) as conn:
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
    async def _write(self, threaded: bool) -> AsyncIterator[Connection]:
        """One atomic write: the block's changes all commit, or none do.

        The block runs in a SAVEPOINT of a group transaction (BEGIN IMMEDIATE) shared
        with the writers queued behind it. When the block exits normally, this
        returns only once the group is committed (and with durability "full",
        synced to disk). When it raises, its own changes are rolled back and the
        exception propagates; the rest of the group is unaffected. A block must not
        await anything but its statements: the write lock is held meanwhile.
        """
        if self._writer is None:
            raise RuntimeError("database is not open")
        self._waiting += 1
        try:
            await self._write_lock.acquire()
        except BaseException:
            self._waiting -= 1
            self._flush_if_abandoned()
            raise
        self._waiting -= 1
        raw = self._writer  # read under the lock: close() may have ended it meanwhile
        if raw is None:
            self._write_lock.release()
            raise RuntimeError("database is closed")
        committed: asyncio.Future[None] | None = None
        try:
            if self._group is None:
                await through(self._begin(raw))
            raw.execute("SAVEPOINT write_block")
            try:
                yield Connection(raw, threaded)
            except BaseException as exc:
                if isinstance(exc, sqlite3.Error) and not raw.in_transaction:
                    self._ended_by = exc  # SQLite ended the group; say why to the others
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
                    await through(self._commit(raw, group))
            finally:
                self._write_lock.release()
        if committed is not None:
            await committed

    async def _begin(self, raw: sqlite3.Connection) -> None:
        """Open the group transaction: BEGIN IMMEDIATE on the loop when the lock is free
        (almost always); when another process holds it, wait for it on the commit
        thread instead. The group is marked open in the same step, so a cancellation
        cannot leave a transaction that no writer will commit. With other workers, this
        worker's turn comes first (`sqlite_write_turn`); `_commit` gives it back."""
        turn = self._turn
        if turn is not None and not turn.try_take():
            await self._in_commit_thread(turn.take)
        try:
            await self._begin_transaction(raw)
        except BaseException:
            if turn is not None:
                turn.give()
            raise

    async def _begin_transaction(self, raw: sqlite3.Connection) -> None:
        try:
            raw.execute("BEGIN IMMEDIATE")
            self._group = []
            self._ended_by = None
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
        self._ended_by = None

    async def _commit(self, raw: sqlite3.Connection, group: list[asyncio.Future[None]]) -> None:
        """COMMIT the group transaction and answer each of its writers (never raises),
        then give the write turn back."""
        try:
            await self._end_group(raw, group)
        finally:
            if self._turn is not None:
                self._turn.give()

    async def _end_group(self, raw: sqlite3.Connection, group: list[asyncio.Future[None]]) -> None:
        try:
            if not raw.in_transaction:
                # SQLite rolls a whole transaction back on some errors (disk full, I/O).
                ended = sqlite3.OperationalError(
                    f"the write transaction was rolled back by SQLite: {self._ended_by}"
                )
                # The same result code, so the other writers get the same 503.
                code = getattr(self._ended_by, "sqlite_errorcode", None)
                if isinstance(code, int):
                    ended.sqlite_errorcode = code
                raise ended
            await self._in_commit_thread(lambda: raw.execute("COMMIT"))
            self.commits += 1
            checkpointer = self._checkpointer
            restart = checkpointer is not None and checkpointer.committed()
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
        if restart and checkpointer is not None:  # answered already; the lock is still held
            await self._in_commit_thread(lambda: checkpointer.restart(raw))

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
                await through(self._commit(self._writer, group))


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

    async def __aexit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        raw, self._raw = self._raw, None
        db = self._db
        if raw is not None:
            if db._writer is None or len(db._idle_readers) >= READERS_KEPT:
                # The database was closed while this block read, or enough readers
                # wait already.
                raw.close()
                db._all_readers.remove(raw)
            else:
                db._idle_readers.append(raw)
        if isinstance(exc, sqlite3.Error):
            unavailable = unavailable_error(exc)
            if unavailable is not None:
                raise unavailable from exc


def _undo_block(raw: sqlite3.Connection) -> None:
    """Roll a failed write block back to its savepoint. Never raises an error of its
    own over the block's: when SQLite has ended the whole transaction (it does on
    some errors, disk full among them), the group's COMMIT step reports that to the
    other writers of the group."""
    if raw.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            raw.execute("ROLLBACK TO write_block")
            raw.execute("RELEASE write_block")
