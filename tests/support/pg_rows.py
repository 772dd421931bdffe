"""Rows PostgreSQL read, per table, counted by the backend's statistics not yet
reported (pg_stat_xact_user_tables). Those span the connection's earlier
transactions too, so a test reads them before and after inside one connection. They
hold on a busy machine where timings do not.

The statistics they are read on: a new instance's (`autovacuum_off`: the tables the
migrations analysed while empty stay so) or gathered (`analyse`). And a history to
read them over: a user's plays as an app uploads them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from podsync.storage.engine import Connection
from podsync.storage.postgres import PostgresDatabase


async def _schema_tables(conn: Connection) -> list[str]:
    rows = await conn.fetch_all(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
    )
    return [str(r[0]) for r in rows]


async def autovacuum_off(conn: Connection) -> None:
    """No autovacuum pass on this schema's tables: a new instance's statistics until
    the test's `analyse` (as in its first minute, or for good where autovacuum is off
    or behind)."""
    tables = await _schema_tables(conn)
    await conn.execute(
        "; ".join(f"ALTER TABLE {t} SET (autovacuum_enabled = false)" for t in tables)
    )


async def analyse(conn: Connection) -> None:
    """ANALYZE this schema's tables: a bare ANALYZE would take every test's schema in
    the cluster's shared database."""
    await conn.execute(f"ANALYZE {', '.join(await _schema_tables(conn))}")


async def rows_read(conn: Connection) -> dict[str, int]:
    """Per table: its rows read by sequential scans, its rows fetched through an
    index, and the entries read of its indexes (a bitmap scan can read many entries
    for one row). Summed by name: a backend's view can list a table twice (another
    of its name whose counts stay 0)."""
    rows = await conn.fetch_all(
        "SELECT t.relname, coalesce(t.seq_tup_read, 0) + coalesce(t.idx_tup_fetch, 0) "
        "+ coalesce((SELECT sum(pg_stat_get_xact_tuples_returned(i.indexrelid)) "
        "FROM pg_index i WHERE i.indrelid = t.relid), 0) FROM pg_stat_xact_user_tables t"
    )
    read: dict[str, int] = {}
    for name, n in rows:
        read[str(name)] = read.get(str(name), 0) + int(n)
    return read


class Counted:
    """The engine as a service sees it (its writes and snapshots), keeping the rows
    the last block read of each table, read before and after on its connection."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        self.read: dict[str, int] = {}

    @asynccontextmanager
    async def write(
        self, user: int | None = None, threaded: bool = False
    ) -> AsyncIterator[Connection]:
        async with self.db.write(user=user, threaded=threaded) as conn, self._counting(conn):
            yield conn

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Connection]:
        async with self.db.snapshot() as conn, self._counting(conn):
            yield conn

    @asynccontextmanager
    async def _counting(self, conn: Connection) -> AsyncIterator[None]:
        before = await rows_read(conn)
        yield
        after = await rows_read(conn)
        self.read = {t: n - before.get(t, 0) for t, n in after.items()}


def podcast(n: int) -> str:
    return f"https://feeds.example/{n}/rss.xml"


def episode(n: int, upload: int) -> str:
    return f"https://media.example/{n}/{upload}.mp3"


def plays(upload: int, podcasts: range) -> list[dict[str, Any]]:
    """Upload `upload`'s plays: an episode of its own for each of `podcasts`."""
    return [
        {
            "podcast": podcast(n),
            "episode": episode(n, upload),
            "device": "phone",
            "action": "play",
            "timestamp": f"2026-03-01T08:{upload % 60:02d}:{n % 60:02d}",
            "started": 0,
            "position": 30 + upload,
            "total": 3600,
        }
        for n in podcasts
    ]
