"""SQLite connections as the store sees them, and how one is opened.

`Connection` is the engine-neutral face the store is written against (`fetch_all`,
`fetch_one`, `execute`, `execute_many`, all awaitable), so a second engine with an
async driver (PostgreSQL) offers the same calls. A statement runs on the calling
thread (the event loop): SQLite answers a keyed lookup or a page of 50 rows in tens
of microseconds, where a hop to a connection thread costs several times that.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from podsync.recent import Recent
from podsync.sorting import SQL_FUNCTION, sort_key
from podsync.storage import loop_share
from podsync.storage.through import through

T = TypeVar("T")
# A list page sorts every row of a user's subscriptions by it: the keys of the titles
# sorted lately are kept (a third of the cost of computing them again), titles up to
# SORT_KEY_CACHED_CHARS long only, so the memo stays within a few MiB whatever the
# titles (16,384 keys of titles of thousands of characters were tens of MiB).
SORT_KEY_CACHED_CHARS = 120
SORT_KEYS_KEPT = 1 << 13  # keys in each of the memo's two generations, at most


class _SortKeys(Recent[str, str]):
    """The sort keys of the titles sorted lately (two generations of SORT_KEYS_KEPT
    keys at most, `recent.Recent`), so a worker keeps the titles of its recent pages,
    not of every page it served. Titles longer than SORT_KEY_CACHED_CHARS are not
    kept. Called from every connection's thread."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(SORT_KEYS_KEPT, clock=clock)

    def __call__(self, title: str | None) -> str | None:
        if title is None or len(title) > SORT_KEY_CACHED_CHARS:
            return sort_key(title)
        recent = self.recent  # a page sorts thousands of rows: a hit stays inline
        if title in recent:
            return recent[title]
        key = self.get(title, None)
        if key is None:
            key = sort_key(title)
            if key is not None:
                self.put(title, key)
        return key


_cached_sort_key = _SortKeys()


log = logging.getLogger("podsync.db")


def _as_is(value: T) -> T:
    return value


# sqlite3 binds an int, float or str as it is, but sends any other value (bytes, None)
# through its adapter protocol first: with no adapter registered for the type, that
# asks a class for `__adapt__` and builds an AttributeError only to drop it, about
# 2,000 CPU instructions a value, three a new subscription row (its stored view, and
# its title and unsubscribed_at when None). Registered as themselves, they are found
# in the table of adapters and bound as before (a blob, a NULL).
sqlite3.register_adapter(bytes, _as_is)
sqlite3.register_adapter(type(None), _as_is)

BUSY_TIMEOUT_MS = 10_000
SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}
# Prepared statements kept per connection (the default, 128, is enough today; the
# gpodder layer and the PostgreSQL-shaped queries add more).
STATEMENT_CACHE = 256
# Each connection's page cache, at most (SQLite's default, said here so the bound on
# a process's memory can be added up: the writer and `sqlite.READERS_KEPT` readers).
CACHE_KIB = 2000
# The writer holds a group transaction's changed pages in memory up to this many
# (about 8 MiB at 4 KiB pages) before it writes them to the log ahead of the COMMIT
# ("spills"). SQLite spills past `cache_size` by default, and a group of eight sync
# batches of new feeds changes about 800 pages (a leaf of each index on a random
# key, per row): past 500, the pages that the group's later blocks change again
# (the indexes' upper pages, each table's last leaf) went to the log more than once,
# and a spilled page read again came back from the log. The cache holds more than
# CACHE_KIB only while a group is open: the COMMIT leaves the pages clean, and those
# past CACHE_KIB are freed. Not a multiple of 256: SQLite reads the pragma's number
# as a boolean too, modulo 256, and 2048 would turn spilling off, with no bound.
WRITER_SPILL_PAGES = 2000
# A log that starts over is cut back to this (sqlite_checkpoint: the file's size is
# then the log's length).
JOURNAL_SIZE_LIMIT = 4 * 1024 * 1024

# `INSERT ... VALUES (?, ..., ?)`, maybe with an ON CONFLICT clause: what execute_many
# runs as multi-row INSERTs. One statement step for 30 rows instead of 30 costs 40%
# less (an episode upload's 30 actions: 0.42 ms instead of 0.71).
_ROW_INSERT = re.compile(
    r"(INSERT\b.*?\bVALUES\s*)(\(\?(?:\s*,\s*\?)*\))(\s+ON CONFLICT\b.*)?", re.S
)
# Bound parameters per statement: within 999, the limit of SQLite before 3.32.
MAX_PARAMETERS = 999
# Rows per multi-row INSERT: a batch goes in as statements of these sizes, the largest
# that fits first (30 rows: 24 and 6), so that an INSERT has a few texts, each
# prepared once per connection, where one for every batch size would have been
# prepared and kept (a connection keeps up to STATEMENT_CACHE). A statement more
# costs about 8 us; a statement a size kept a writer's cache full of them.
INSERT_ROWS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
# Rows of one execute_many past which its statements run one step at a time.
SHARED_ROWS = 256


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


class Connection:
    """One database connection as the store sees it: awaitable statements.

    On SQLite a statement runs on the calling thread (`threaded=False`, the event
    loop) or, for the few reads too big for the loop (an OPML export of 200k
    feeds), on a worker thread (`threaded=True`)."""

    dialect = "sqlite"
    gated_user = None  # one writer serialises every write already: no gate
    __slots__ = ("raw", "threaded")

    def __init__(self, raw: sqlite3.Connection, threaded: bool = False) -> None:
        self.raw = raw
        self.threaded = threaded

    async def _call(self, fn: Callable[[], T]) -> T:
        if self.threaded:
            # To its end even when cancelled: the connection goes back to the pool after.
            return await through(asyncio.to_thread(fn))
        if loop_share.due():  # a long write's turn to let the others in
            await loop_share.share()
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
        """Run one statement per row; the number of rows changed. An INSERT of many
        rows runs as multi-row INSERTs (`VALUES (...), (...)`): each row still goes
        through the same constraints and conflict clause in turn."""
        shape = _multi_row(sql)
        if shape is None and not isinstance(rows, list):  # a stream: one step, as it comes
            return await self._call(lambda: self.raw.executemany(sql, rows).rowcount)
        batch = rows if isinstance(rows, list) else list(rows)
        if self.threaded or len(batch) <= SHARED_ROWS:
            if shape is None:
                return await self._call(functools.partial(_execute_many, self.raw, sql, batch))
            return await self._call(lambda: sum(_inserts(self.raw, shape, batch)))
        # Many rows on the loop: a statement (or SHARED_ROWS rows) at a time, so that a
        # long write can let the other requests in between two (`loop_share`).
        changed = 0
        if shape is None:
            for start in range(0, len(batch), SHARED_ROWS):
                piece = batch[start : start + SHARED_ROWS]
                changed += await self._call(functools.partial(_execute_many, self.raw, sql, piece))
            return changed
        for count in _inserts(self.raw, shape, batch):
            changed += count
            if loop_share.due():
                await loop_share.share()
        return changed


@functools.lru_cache(maxsize=64)
def _multi_row(sql: str) -> tuple[str, str, str, int] | None:
    """(head up to VALUES, the row's `(?, ...)`, the tail, parameters per row)."""
    match = _ROW_INSERT.fullmatch(sql)
    if match is None:
        return None
    head, group, tail = match.group(1), match.group(2), match.group(3) or ""
    return head, group, tail, group.count("?")


def _execute_many(raw: sqlite3.Connection, sql: str, rows: list[Sequence[Any]]) -> int:
    return raw.executemany(sql, rows).rowcount


def _inserts(
    raw: sqlite3.Connection, shape: tuple[str, str, str, int], rows: list[Sequence[Any]]
) -> Iterator[int]:
    """Run `rows` as multi-row INSERTs of `shape`, one statement a step: the rows
    each changed."""
    head, group, tail, width = shape
    per_statement = max(1, MAX_PARAMETERS // width)
    start = 0
    while start < len(rows):
        room = min(len(rows) - start, per_statement)
        count = next(n for n in reversed(INSERT_ROWS) if n <= room)
        chunk = rows[start : start + count]
        sql = f"{head}{','.join([group] * count)}{tail}"
        yield raw.execute(sql, [value for row in chunk for value in row]).rowcount
        start += count


def connect(path: str, durability: str, *, create: bool = True) -> sqlite3.Connection:
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
        raw.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        # The first statement that reads the file: fails on one that is not a database.
        raw.execute(f"PRAGMA synchronous = {SYNCHRONOUS[durability]}")
        # SAVEPOINTs and sorts spill to temp files otherwise (a sub-journal per batch).
        raw.execute("PRAGMA temp_store = MEMORY")
        # Whenever the log is recycled from its start, the file is cut back to this.
        raw.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")
        # A-Z as people read it (podsync/sorting.py); PostgreSQL has it in SQL.
        raw.create_function(SQL_FUNCTION, 1, _cached_sort_key, deterministic=True)
    except BaseException:
        raw.close()
        raise
    return raw
