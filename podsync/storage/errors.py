"""What an engine's faults mean to a client, for both engines in one place, and a
database URL as messages show it (without its password).

A fault that is "not now" (locked, busy, full, read-only, the server not taking
connections) leaves the storage layer as `Unavailable`: a 503 with `Retry-After`
and the same words on either engine. Anything else is a bug and stays an error.
"""

from __future__ import annotations

import sqlite3
from urllib.parse import urlsplit, urlunsplit

from podsync.errors import Unavailable
from podsync.storage.sqlite_connection import BUSY_TIMEOUT_MS

RETRY_AFTER_LOCKED = 1  # another writer: seconds, at most
RETRY_AFTER_STORAGE = 60  # an admin has to free space or remount: minutes


class SchemaTooNew(Exception):
    """The database was written by a newer podsync than this one."""


def redact(url: str) -> str:
    """The URL without its password, for logs and messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def read_only() -> Unavailable:
    return Unavailable("the database is read-only", RETRY_AFTER_STORAGE)


def disk_full() -> Unavailable:
    return Unavailable("the disk holding the database is full", RETRY_AFTER_STORAGE)


def busy(why: str) -> Unavailable:
    return Unavailable(f"the database is busy ({why}); try again shortly", RETRY_AFTER_LOCKED)


def unavailable_error(exc: BaseException) -> Unavailable | None:
    """The Unavailable (503) an engine's error stands for, or None when it is not one
    of the "not now" conditions. The one place that reads either engine's codes."""
    if isinstance(exc, sqlite3.Error):
        return _sqlite_fault(exc)
    if type(exc).__module__.startswith("asyncpg"):
        return _postgres_fault(exc)
    return None


def _sqlite_fault(exc: sqlite3.Error) -> Unavailable | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int):
        return None
    primary = code & 0xFF  # extended codes keep the primary one in the low byte
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return Unavailable(
            f"the database is locked by another writer (waited {BUSY_TIMEOUT_MS // 1000} s); "
            f"try again shortly",
            RETRY_AFTER_LOCKED,
        )
    if primary == sqlite3.SQLITE_FULL:
        return disk_full()
    if primary == sqlite3.SQLITE_READONLY:
        return read_only()
    return None


def _postgres_fault(exc: BaseException) -> Unavailable | None:
    """Read-only (a standby, or read-only by setting), disk full, a lock or connection
    limit, or a server that does not take connections."""
    import asyncpg  # only a PostgreSQL server has raised one of its errors

    if isinstance(exc, asyncpg.ReadOnlySQLTransactionError):
        return read_only()
    if isinstance(exc, asyncpg.DiskFullError):
        return disk_full()
    if isinstance(
        exc,
        asyncpg.TooManyConnectionsError
        | asyncpg.CannotConnectNowError
        | asyncpg.LockNotAvailableError
        | asyncpg.DeadlockDetectedError
        | asyncpg.SerializationError,
    ):
        return busy(str(exc))
    return None
