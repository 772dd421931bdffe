"""Copying a whole database from one engine to another (`podsync db copy-to`).

Generic over tables, so a table added by a later migration is copied without a
change here: the tables are the source's, in the order their foreign keys need
(parents first), each column by name. Both databases are at the same schema
version (both engines migrate on open), so the columns match.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from podsync.store import Connection

CHUNK = 5000
# Tables whose rows are large: fewer at a time (an image is up to a few MiB).
CHUNK_OF = {"artwork": 16}


async def tables_in_order(source: Connection) -> list[str]:
    """The source's tables (SQLite), parents before the tables that refer to them.
    Not the search index (a virtual table and its shadow tables: the target keeps
    its own, PostgreSQL's index over the copied words)."""
    names = [
        str(r[0])
        for r in await source.fetch_all(
            "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' "
            "AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    parents = {
        name: {
            str(r[0])
            for r in await source.fetch_all(
                'SELECT "table" FROM pragma_foreign_key_list(?)', (name,)
            )
        }
        - {name}
        for name in names
    }
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [n for n in names if n not in ordered and parents[n] <= set(ordered)]
        if not ready:
            raise ValueError("the tables' foreign keys form a cycle")
        ordered += ready
    return ordered


async def columns(source: Connection, table: str) -> list[str]:
    return [
        str(r[0]) for r in await source.fetch_all("SELECT name FROM pragma_table_info(?)", (table,))
    ]


async def count(conn: Connection, table: str) -> int:
    row = await conn.fetch_one(f"SELECT count(*) FROM {table}")
    return int(row[0]) if row else 0


async def read_chunks(
    source: Connection, table: str, names: list[str]
) -> AsyncIterator[list[tuple[object, ...]]]:
    """Every row of `table`, CHUNK rows at a time (CHUNK_OF for large rows). Call
    inside one read transaction: the same plan then scans in the same order for every
    chunk (OFFSET paging also works for the WITHOUT ROWID tables)."""
    offset = 0
    size = CHUNK_OF.get(table, CHUNK)
    while True:
        rows = await source.fetch_all(
            f"SELECT {', '.join(names)} FROM {table} LIMIT ? OFFSET ?", (size, offset)
        )
        if not rows:
            return
        offset += len(rows)
        yield [tuple(r) for r in rows]


async def is_empty(target: Connection) -> bool:
    """No user and no subscription yet (a freshly migrated database)."""
    return await count(target, "users") == 0 and await count(target, "subscriptions") == 0


async def write_rows(
    target: Connection, table: str, names: list[str], rows: list[tuple[object, ...]]
) -> None:
    marks = ", ".join("?" * len(names))
    await target.execute_many(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})", rows)


async def clear(target: Connection, table: str) -> None:
    """Empty a table the migrations seeded (meta: the change counter)."""
    await target.execute(f"DELETE FROM {table}")


async def issued_ids(source: Connection) -> dict[str, int]:
    """The highest id SQLite ever issued per AUTOINCREMENT table (`sqlite_sequence`):
    deleted rows' ids included, which SQLite never hands out again."""
    rows = await source.fetch_all("SELECT name, seq FROM sqlite_sequence")
    return {str(name): int(seq) for name, seq in rows}


async def advance_identities(target: Connection, issued: dict[str, int]) -> None:
    """PostgreSQL: start each identity column's sequence past both the copied ids and
    the highest id the source ever issued (`issued`, from `issued_ids`), so no id is
    handed out twice: a deleted user's tokens and cookies name its id, and must never
    name a user created after the move (SQLite has no sequences to move)."""
    if target.dialect != "postgresql":
        return
    for table, column in await target.fetch_all(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE is_identity = 'YES' AND table_schema = current_schema()"
    ):
        await target.fetch_one(
            f"SELECT setval(pg_get_serial_sequence(?, ?), "
            f"greatest(coalesce((SELECT max({column}) FROM {table}), 0), ?) + 1, false)",
            (table, column, issued.get(table, 0)),
        )


async def analyse(target: Connection, tables: list[str]) -> None:
    """PostgreSQL: gather the statistics of the tables just filled. A new database's
    migrations analysed them empty and autovacuum comes back a while later: until
    then the planner knows each table's size but nothing of its columns, and guesses
    that any user holds a two-hundredth of the rows, so a statement on a user's rows
    can read all of them to find a few. SQLite runs without statistics."""
    if target.dialect == "postgresql" and tables:
        await target.execute(f"ANALYZE {', '.join(tables)}")
