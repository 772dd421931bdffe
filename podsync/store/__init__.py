"""All SQL of podsync lives in this package.

Functions take an open connection (from `Database.read()` or `Database.write()`),
so the caller decides the transaction; they return dataclasses or plain values
and raise domain errors from `podsync.errors`. Nothing here knows HTTP or Click.

Queries go through `fetch_all`/`fetch_one`: one hop to the connection's thread per
query (aiosqlite's execute_fetchall), where execute + fetch + close would take
three. On the write path every hop is time the single writer is held.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiosqlite


async def fetch_all(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """Every row of one query, in one round trip to the connection's thread."""
    return list(await conn.execute_fetchall(sql, params))


async def fetch_one(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> Any:
    """The first row of one query, or None."""
    rows = await fetch_all(conn, sql, params)
    return rows[0] if rows else None
