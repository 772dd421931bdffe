"""The PostgreSQL engine: an asyncpg pool behind the same units of work as SQLite.

Why asyncpg: it speaks the binary protocol from asyncio directly (no thread hop,
no libpq), prepares and caches each statement per connection on first use, and
its published benchmarks put it several times ahead of psycopg 3's async mode on
small keyed queries, which is all podsync sends (README, "Running a bigger
instance").

What does not carry over from SQLite: there is no single writer and no group
commit. Every `write()` is its own transaction on a pooled connection, and
PostgreSQL serialises only what conflicts. A connection is taken from the pool
for one block and given back at its end; services never await anything else
(argon2, the client) inside a block, so a slow client never holds a connection.

The ordering of the change feed across processes is the store's business
(`store.meta.lock_user` and `store.users.next_change_seqs`): see there.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import weakref
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import Any

import asyncpg

from podsync.errors import PodsyncError, Unavailable
from podsync.storage.errors import (
    RETRY_AFTER_STORAGE,
    connection_fault,
    no_connection,
    redact,
    register_engine_errors,
    unstorable_text,
)
from podsync.storage.migrations.postgres import migrate

register_engine_errors(
    (asyncpg.PostgresError, asyncpg.InterfaceError),
    (asyncpg.IntegrityConstraintViolationError,),
)

POOL_MIN = 1
# Connections per process. Four processes of 10 stay well under PostgreSQL's default
# max_connections (100); a block holds one only while its statements run.
POOL_MAX = 10
# A user's writes (`write(user=...)`) that hold a pooled connection at once, per
# process: one writing and one waiting for the user's lock inside PostgreSQL, so it
# starts the moment the first commits. The rest wait here without a connection: a
# burst of one user's batches (each waits for the one before, `store.meta.lock_user`)
# took every connection of the pool and stalled everyone else's requests behind it.
USER_WRITERS = 2
_COUNT = re.compile(r"(\d+)$")


@lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """`?` placeholders to `$1, $2, ...`, outside string literals (once per text)."""
    out: list[str] = []
    n = 0
    quoted = False
    for char in sql:
        if char == "'":
            quoted = not quoted
        elif char == "?" and not quoted:
            n += 1
            out.append(f"${n}")
            continue
        out.append(char)
    return "".join(out)


def _changed(status: str) -> int:
    """Rows changed, from a command tag like 'UPDATE 3' or 'INSERT 0 1'."""
    match = _COUNT.search(status)
    return int(match.group(1)) if match else 0


async def _no_session_reset(raw: asyncpg.Connection) -> None:
    """What a connection needs on its way back to the pool beyond asyncpg's own
    cleanup (which rolls back a transaction left open): nothing. asyncpg's default
    also sends RESET ALL, CLOSE ALL, UNLISTEN * and releases session advisory locks,
    a round trip on every unit of work for state podsync never creates: it sets no
    session setting, declares no cursor, listens to nothing and takes advisory locks
    for the transaction only."""


class PgConnection:
    """An asyncpg connection with the store's calls and `?` placeholders.

    In a write block the BEGIN waits for the block's first statement: when that
    statement has no parameters (a simple query, which may hold several statements,
    as `meta.lock_user`'s does), the BEGIN goes in the same round trip; otherwise
    it goes just before. A block that sends nothing sends no BEGIN and no COMMIT."""

    dialect = "postgresql"
    __slots__ = ("_begin_pending", "gated_user", "raw")

    def __init__(
        self, raw: asyncpg.Connection, *, begin: bool = False, gated_user: int | None = None
    ) -> None:
        self.raw = raw
        self._begin_pending = begin
        self.gated_user = gated_user

    @property
    def began(self) -> bool:
        """Whether the block's transaction was opened (always, outside a write block)."""
        return not self._begin_pending

    async def _begin(self) -> None:
        if self._begin_pending:
            self._begin_pending = False
            await self.raw.execute("BEGIN")

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        await self._begin()
        return list(await self.raw.fetch(translate(sql), *params))

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        await self._begin()
        return await self.raw.fetchrow(translate(sql), *params)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Rows changed (for a SELECT: rows returned) by `sql`'s last statement.
        Without `params`, `sql` goes as one simple query and may hold several
        statements (their values written in the text: never text from outside)."""
        if params:
            await self._begin()
            status: str = await self.raw.execute(translate(sql), *params)
        else:
            if self._begin_pending:
                self._begin_pending = False
                sql = "BEGIN; " + sql
            status = await self.raw.execute(sql)
        return _changed(status)

    async def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        batch = [tuple(row) for row in rows]
        if batch:
            await self._begin()
            await self.raw.executemany(translate(sql), batch)
        return len(batch)  # asyncpg reports no count; callers write each row once


class PostgresDatabase:
    """One PostgreSQL database shared by any number of podsync processes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = redact(url)
        self.commits = 0
        self.write_failure: Unavailable | None = None  # SQLite's disk-full memory; none here
        self._pool: asyncpg.Pool | None = None
        # user id -> the gate of its writes in this process (gone when none waits)
        self._user_gates: weakref.WeakValueDictionary[int, asyncio.Semaphore] = (
            weakref.WeakValueDictionary()
        )

    async def open(self) -> None:
        """Connect and migrate (one process at a time, under an advisory lock)."""
        self._pool = await asyncpg.create_pool(
            self.url, min_size=POOL_MIN, max_size=POOL_MAX, reset=_no_session_reset
        )
        try:
            async with self._pool.acquire() as raw:
                await migrate(raw)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    async def __aenter__(self) -> PostgresDatabase:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _ready(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("database is not open")
        return self._pool

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection for one block. Any failure to obtain one (the pool
        opening a new connection, or a pooled one found closed) is a 503 whatever
        its class: the server down, a database closed to connections, a password
        rotated, TLS refused, or anything a driver release adds."""
        pool = self._ready()
        try:
            raw = await pool.acquire()
        except Exception as exc:
            raise no_connection(exc) from exc
        try:
            yield raw
        finally:
            await pool.release(raw)

    @asynccontextmanager
    async def read(self, *, threaded: bool = False) -> AsyncIterator[PgConnection]:
        """A pooled connection in autocommit for the block (`threaded` is SQLite's)."""
        async with _Faults(self), self._connection() as raw:
            yield PgConnection(raw)

    @asynccontextmanager
    async def snapshot(self, *, threaded: bool = False) -> AsyncIterator[PgConnection]:
        """One REPEATABLE READ read-only transaction: the block's queries agree."""
        async with (
            _Faults(self),
            self._connection() as raw,
            raw.transaction(isolation="repeatable_read", readonly=True),
        ):
            yield PgConnection(raw)

    def _user_gate(self, user: int | None) -> contextlib.AbstractAsyncContextManager[Any]:
        if user is None:
            return contextlib.nullcontext()
        gate = self._user_gates.get(user)
        if gate is None:
            gate = self._user_gates[user] = asyncio.Semaphore(USER_WRITERS)
        return gate

    @asynccontextmanager
    async def write(
        self, *, user: int | None = None, threaded: bool = False
    ) -> AsyncIterator[PgConnection]:
        """One atomic write (READ COMMITTED): all of the block's changes commit, or none.
        Returns once PostgreSQL has committed (durably, with synchronous_commit on).
        `user`: the user whose lock the block takes first; at most USER_WRITERS such
        blocks of one user hold a connection at once in this process. `threaded` is
        SQLite's: a statement here never holds the event loop while it runs."""
        async with self._user_gate(user), _Faults(self, writing=True), self._connection() as raw:
            conn = PgConnection(raw, begin=True, gated_user=user)
            try:
                yield conn
            except BaseException:
                if conn.began:
                    await _roll_back(raw)
                raise
            if conn.began:
                await raw.execute("COMMIT")
            self.commits += 1
        self.write_failure = None


async def _roll_back(raw: asyncpg.Connection) -> None:
    """End a failed write block's transaction. A connection that cannot roll back is
    broken (closed, or already handed back to the pool when the server ended it):
    the block's own error is the one to report, and the pool replaces it."""
    with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        if not raw.is_closed():
            await raw.execute("ROLLBACK")


class _Faults:
    """Around every unit of work: the server's "not now" faults (down, starting,
    shutting down, out of connections, the connection lost, read-only, full) leave
    as `Unavailable` (503), text it cannot store as `InvalidInput` (400), as on
    SQLite. A write that failed for lack of storage is remembered for /healthz."""

    __slots__ = ("_db", "_writing")

    def __init__(self, db: PostgresDatabase, writing: bool = False) -> None:
        self._db = db
        self._writing = writing

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, PodsyncError):
            return
        fault = connection_fault(exc) or unstorable_text(exc)
        if fault is None:
            return
        if (
            self._writing
            and isinstance(fault, Unavailable)
            and fault.retry_after == RETRY_AFTER_STORAGE
        ):
            self._db.write_failure = fault
        raise fault from exc
