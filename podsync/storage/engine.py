"""What the services and the store see of a database engine, and the one factory
that picks the engine from `database.url` (contract sections 11 and 13).

SQLite (`storage.sqlite.Database`) is the default; a `postgresql://` URL selects
`storage.postgres.PostgresDatabase`. Both offer the same units of work
(`read()`, `snapshot()`, `write()`) yielding a `Connection` with the same calls;
where their SQL differs, the store branches on `conn.dialect`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import asyncpg

from podsync.config import DatabaseConfig
from podsync.errors import Unavailable
from podsync.storage.errors import redact

# Errors of either engine that mean "the database failed", for the CLI's messages.
DATABASE_ERRORS: tuple[type[Exception], ...] = (
    sqlite3.Error,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    OSError,
)
# A unique or foreign-key constraint refused a row.
INTEGRITY_ERRORS: tuple[type[Exception], ...] = (
    sqlite3.IntegrityError,
    asyncpg.IntegrityConstraintViolationError,
)


class Connection(Protocol):
    """One connection as the store sees it. SQL uses `?` placeholders on both engines."""

    @property
    def dialect(self) -> str: ...  # "sqlite" or "postgresql"

    async def fetch_all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    async def fetch_one(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> int: ...


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

    def write(self) -> AbstractAsyncContextManager[Connection]: ...


def create_engine(config: DatabaseConfig) -> Engine:
    """The engine `config` names: PostgreSQL when `url` is set, else the SQLite file."""
    if config.url:
        from podsync.storage.postgres import PostgresDatabase

        return PostgresDatabase(config.url)
    from podsync.storage.sqlite import Database

    return Database(config.path, config.durability)


def describe(config: DatabaseConfig) -> str:
    """The database as logs and messages name it: the SQLite path, or the URL
    without its password."""
    return redact(config.url) if config.url else config.path
