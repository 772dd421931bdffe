"""What the services and the store see of a database engine, and the one factory
that picks the engine from `database.url` (contract sections 11 and 13).

SQLite (`storage.sqlite.Database`) is the default; a `postgresql://` URL selects
`storage.postgres.PostgresDatabase`. Both offer the same units of work
(`read()`, `snapshot()`, `write()`) yielding a `Connection` with the same calls;
where their SQL differs, the store branches on `conn.dialect`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from podsync.config import DatabaseConfig
from podsync.config.database_url import describe as describe_url
from podsync.errors import POSTGRES_EXTRA, MissingExtra, PodsyncError, Unavailable
from podsync.storage.errors import connection_fault, database_errors, integrity_errors, redact

__all__ = [
    "Connection",
    "Engine",
    "create_engine",
    "database_errors",
    "describe",
    "integrity_errors",
    "open_when_up",
]

log = logging.getLogger(__name__)
START_RETRY_MAX_S = 10.0  # the longest pause between tries at start


class Connection(Protocol):
    """One connection as the store sees it. SQL uses `?` placeholders on both engines."""

    @property
    def dialect(self) -> str: ...  # "sqlite" or "postgresql"

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> int: ...

    # The user a write block was opened for (`Engine.write(user=)`) where the engine
    # queues writes by user (PostgreSQL); None elsewhere.
    @property
    def gated_user(self) -> int | None: ...


class Engine(Protocol):
    """A database: open/close and the three units of work."""

    commits: int
    # The last write's failure that made the database unavailable (SQLite: disk full),
    # until a write commits again; /healthz reports it.
    write_failure: Unavailable | None

    @property
    def path(self) -> str: ...  # what log lines and messages name (a URL without password)

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    def read(self, *, threaded: bool = False) -> AbstractAsyncContextManager[Connection]: ...

    def snapshot(self, *, threaded: bool = False) -> AbstractAsyncContextManager[Connection]: ...

    # `user`: the user whose lock (`store.meta.lock_user`) the block takes first; the
    # engine may queue that user's writes before they take a connection. `threaded`:
    # for a block whose statements run long (an account's deletion), which SQLite then
    # runs on a worker thread, off the event loop.
    def write(
        self, *, user: int | None = None, threaded: bool = False
    ) -> AbstractAsyncContextManager[Connection]: ...


def create_engine(config: DatabaseConfig, checkpoints: str = "own", write_turn: str = "") -> Engine:
    """The engine `config` names: PostgreSQL when `url` is set, else the SQLite file
    (`checkpoints`: who checkpoints its log, `sqlite_checkpoint.Checkpointer`;
    `write_turn`: the lock file of the workers beside it, `sqlite_write_turn`)."""
    if config.url:
        try:
            from podsync.storage.postgres import PostgresDatabase
        except ImportError as exc:
            if exc.name != "asyncpg":
                raise
            raise MissingExtra(
                f"database.url is set, but the PostgreSQL driver (asyncpg) is not "
                f"installed: {POSTGRES_EXTRA}"
            ) from None
        return PostgresDatabase(config.url)
    from podsync.storage.sqlite import Database

    return Database(config.path, config.durability, checkpoints, write_turn)


def describe(config: DatabaseConfig) -> str:
    """The database as logs and messages name it: the SQLite path, or the URL
    without its password."""
    return redact(config.url) if config.url else config.path


async def open_when_up(db: Engine, config: DatabaseConfig) -> None:
    """Open `db` for serving. A PostgreSQL server that is not up yet (refused,
    unreachable, starting up: podsync and the database started together) is tried
    again for `config.start_wait` seconds, a WARNING each time; then PodsyncError
    names the database and the reason. Any other failure is raised at once."""
    if not config.url:
        await db.open()
        return
    where = describe_url(config.url)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + config.start_wait
    pause = 1.0
    while True:
        try:
            await db.open()
            return
        except Exception as exc:
            fault = connection_fault(exc)
            if fault is None:
                raise
            reason = fault.reason.removesuffix("; try again shortly")
            if loop.time() + pause > deadline:
                waited = f" (waited {config.start_wait} s)" if config.start_wait else ""
                raise PodsyncError(f"database {where}: {reason}{waited}") from None
            log.warning("database %s: %s; trying again in %.0f s", where, reason, pause)
        await asyncio.sleep(pause)
        pause = min(pause * 2, START_RETRY_MAX_S)
