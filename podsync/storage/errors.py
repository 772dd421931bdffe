"""What an engine's faults mean to a client, for both engines in one place, and a
database URL as messages show it (without its password).

A fault that is "not now" (locked, busy, full, read-only, the server down, starting,
shutting down, out of connections or gone mid-request) leaves the storage layer as
`Unavailable`: a 503 with `Retry-After` and words that say which, on every route.
So does any failure to obtain a connection, whatever its class (`no_connection`):
that is mapped by where it happens, not by a list.
Text the engine cannot store is `InvalidInput` (400). Anything else is a bug and
stays an error.
"""

from __future__ import annotations

import sqlite3
from urllib.parse import unquote_plus

from podsync.errors import InvalidInput, Unavailable
from podsync.storage.sqlite_connection import BUSY_TIMEOUT_MS

RETRY_AFTER_LOCKED = 1  # another writer: seconds, at most
RETRY_AFTER_STORAGE = 60  # an admin has to free space or remount: minutes
RETRY_AFTER_DOWN = 5  # a database server stopped, starting or shutting down


class SchemaTooNew(Exception):
    """The database was written by a newer podsync than this one."""


REDACTED = "<redacted>"  # a secret as any output shows it (contract section 14)


# Errors that mean "the database failed" (for the CLI's messages), and errors of a
# unique or foreign-key constraint that refused a row. SQLite's are always here; the
# PostgreSQL engine adds asyncpg's when it is loaded, which is the only way one of
# them can be raised (asyncpg is an extra, never imported for SQLite).
_database_errors: tuple[type[Exception], ...] = (sqlite3.Error, OSError)
_integrity_errors: tuple[type[Exception], ...] = (sqlite3.IntegrityError,)


def database_errors() -> tuple[type[Exception], ...]:
    """For `except database_errors():` (evaluated when an error is being handled)."""
    return _database_errors


def integrity_errors() -> tuple[type[Exception], ...]:
    return _integrity_errors


def register_engine_errors(
    database: tuple[type[Exception], ...], integrity: tuple[type[Exception], ...]
) -> None:
    """Called once by an engine module that brings its own driver's errors."""
    global _database_errors, _integrity_errors
    _database_errors = tuple(dict.fromkeys(_database_errors + database))
    _integrity_errors = tuple(dict.fromkeys(_integrity_errors + integrity))


def redact(url: str) -> str:
    """`url` with every password in it replaced by "<redacted>": the user part's
    (`user:password@host`) and the value of each query parameter whose name holds
    "password" (`password`, `sslpassword`, ...) in any case or percent-encoding.
    Everything else stays exactly as written, so the admin still sees what is set.
    Never raises: a URL that does not parse is cut the same way, by its delimiters."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = (rest[:cut], rest[cut:]) if sep else ("", rest)
    userinfo, at, hosts = authority.rpartition("@")
    if at and ":" in userinfo:
        authority = f"{userinfo.partition(':')[0]}:{REDACTED}@{hosts}"
    path, question, query = tail.partition("?")
    query, hash_, fragment = query.partition("#")
    if question:
        query = "&".join(_redact_parameter(p) for p in query.split("&"))
    return f"{scheme}{sep}{authority}{path}{question}{query}{hash_}{fragment}"


def _redact_parameter(parameter: str) -> str:
    name, equals, _ = parameter.partition("=")
    if equals and "password" in unquote_plus(name).lower():
        return f"{name}={REDACTED}"
    return parameter


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
    if isinstance(exc, asyncpg.TooManyConnectionsError):
        return Unavailable(
            f"the database server has too many connections ({exc}); try again shortly",
            RETRY_AFTER_LOCKED,
        )
    if isinstance(exc, asyncpg.CannotConnectNowError):  # starting up, shutting down
        return Unavailable(
            f"the database server does not take connections now ({exc}); try again shortly",
            RETRY_AFTER_DOWN,
        )
    if isinstance(exc, asyncpg.AdminShutdownError | asyncpg.CrashShutdownError):
        return Unavailable(
            f"the database server is shutting down or restarting ({exc}); try again shortly",
            RETRY_AFTER_DOWN,
        )
    # InternalClientError ("another operation is in progress"): a pooled connection
    # that the server ended mid-operation, used again or reset before the pool
    # noticed; the pool discards it after this error. "Released back to the pool":
    # one the server ended between two statements of a block (the pool takes a
    # closed connection back at once), met by the block's next one or its COMMIT.
    if isinstance(exc, asyncpg.PostgresConnectionError | asyncpg.InternalClientError) or (
        isinstance(exc, asyncpg.InterfaceError)
        and str(exc).endswith(("connection is closed", "released back to the pool"))
    ):
        return Unavailable(
            f"the connection to the database server was lost ({exc}); try again shortly",
            RETRY_AFTER_LOCKED,
        )
    if isinstance(
        exc,
        asyncpg.LockNotAvailableError | asyncpg.DeadlockDetectedError | asyncpg.SerializationError,
    ):
        return busy(str(exc))
    return None


def connection_fault(exc: BaseException) -> Unavailable | None:
    """The Unavailable a failure to reach a database server stands for: refused (not
    running), unreachable, or not answering in time. PostgreSQL only: SQLite opens a
    file."""
    if isinstance(exc, ConnectionRefusedError):
        return Unavailable(
            "the database server refused the connection (is it running?); try again shortly",
            RETRY_AFTER_DOWN,
        )
    if isinstance(exc, OSError):
        return Unavailable(
            f"cannot reach the database server ({exc.strerror or exc}); try again shortly",
            RETRY_AFTER_DOWN,
        )
    if isinstance(exc, TimeoutError):
        return Unavailable(
            "the database server did not answer in time; try again shortly", RETRY_AFTER_DOWN
        )
    return unavailable_error(exc)


def no_connection(exc: Exception) -> Unavailable:
    """The Unavailable for any failure to obtain a connection, whatever its class:
    the words of a known fault (refused, unreachable, starting, too many
    connections), else the server's own (a database that takes no connections,
    a password that no longer works, a TLS handshake that fails). Nothing a
    request sent causes it, and it passes once connections are possible again."""
    known = connection_fault(exc)
    if known is not None:
        return known
    words = " ".join(str(exc).split())[:300] or type(exc).__name__
    return Unavailable(
        f"cannot get a connection to the database server ({words}); try again shortly",
        RETRY_AFTER_DOWN,
    )


def unstorable_text(exc: BaseException) -> InvalidInput | None:
    """The 400 for text a database cannot store: PostgreSQL refuses a NUL byte in any
    text value (SQLite stores it). Inputs are checked before they reach the store;
    this is what a parameter that slipped through answers instead of a 500."""
    if type(exc).__module__.startswith("asyncpg"):
        import asyncpg

        if isinstance(
            exc, asyncpg.CharacterNotInRepertoireError | asyncpg.UntranslatableCharacterError
        ):
            return InvalidInput(f"the request holds text the database cannot store ({exc})")
    return None
