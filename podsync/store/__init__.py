"""All SQL of podsync lives in this package.

Functions take an open `Connection` (from `Database.read()`, `.snapshot()` or
`.write()`), so the caller decides the transaction; they return the entities of
`podsync.model` or plain values and raise domain errors from `podsync.errors`.
Nothing here knows HTTP or Click.

The engine boundary: a `Connection` offers `fetch_all`, `fetch_one`, `execute` and
`execute_many` (awaitable) and names its `dialect`. The SQLite engine runs them on
the calling thread; an engine with an async driver (PostgreSQL) awaits its driver.
Where the SQL of two engines differs, the function here chooses by `dialect`, so
services and handlers never see an engine.
"""

from __future__ import annotations

from podsync.storage.engine import INTEGRITY_ERRORS, Connection

__all__ = ["INTEGRITY_ERRORS", "Connection"]
