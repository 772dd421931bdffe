"""On SQLite, execute_many runs an INSERT of many rows as multi-row INSERTs. Whatever
the batch holds (rows already stored, the same key twice, an upsert, more rows than
one statement may bind, a row that breaks a constraint), the tables end as one
statement per row (sqlite3's executemany) leaves them, and it reports the same count."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from podsync.storage.sqlite_connection import (
    INSERT_ROWS,
    MAX_PARAMETERS,
    Connection,
    _multi_row,
)

SCHEMA = """
CREATE TABLE t (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    k     TEXT NOT NULL UNIQUE,
    n     INTEGER NOT NULL CHECK (n >= 0),
    note  TEXT
) STRICT;
CREATE TABLE hits (k TEXT NOT NULL) STRICT;
CREATE TRIGGER t_counts AFTER INSERT ON t BEGIN INSERT INTO hits (k) VALUES (new.k); END;
"""

IGNORE = "INSERT OR IGNORE INTO t (k, n, note) VALUES (?, ?, ?)"
UPSERT = (
    "INSERT INTO t (k, n, note) VALUES (?, ?, ?) "
    "ON CONFLICT (k) DO UPDATE SET n = t.n + excluded.n, note = excluded.note"
)
PLAIN = "INSERT INTO t (k, n, note) VALUES (?, ?, ?)"


def open_db(path: Path) -> sqlite3.Connection:
    raw = sqlite3.connect(path, isolation_level=None)
    raw.executescript(SCHEMA)
    return raw


def tables(raw: sqlite3.Connection) -> list[list[tuple[Any, ...]]]:
    return [
        raw.execute("SELECT id, k, n, note FROM t ORDER BY id").fetchall(),
        raw.execute("SELECT k FROM hits ORDER BY rowid").fetchall(),
        raw.execute("SELECT seq FROM sqlite_sequence").fetchall(),
    ]


BATCHES = {
    "ignore: stored before, and twice in the batch": (
        IGNORE,
        [("a", 1, "x"), ("b", 2, None)],
        [("b", 9, "y"), ("c", 3, None), ("c", 4, "z"), ("a", 5, None), ("d", 0, "")],
    ),
    "upsert: stored before, and twice in the batch": (
        UPSERT,
        [("a", 1, "x")],
        [("a", 2, "y"), ("b", 3, None), ("b", 4, "z"), ("c", 5, None)],
    ),
    "more rows than one statement binds": (
        IGNORE,
        [("k7", 7, None)],
        [(f"k{n % 700}", n, f"note {n}") for n in range(1000)],
    ),
    "ignore skips a row that breaks a CHECK": (
        IGNORE,
        [],
        [("a", 1, None), ("b", -1, None), ("c", 3, None)],
    ),
}


@pytest.mark.parametrize("name", BATCHES)
async def test_the_tables_end_as_one_statement_per_row_leaves_them(
    tmp_path: Path, name: str
) -> None:
    sql, before, batch = BATCHES[name]
    assert _multi_row(sql) is not None  # the multi-row path is the one under test
    assert len(batch) < MAX_PARAMETERS // 3 or name == "more rows than one statement binds"
    reference, tested = open_db(tmp_path / "ref.db"), open_db(tmp_path / "new.db")
    for raw in (reference, tested):
        raw.executemany(sql, before)
    expected = reference.executemany(sql, batch).rowcount
    assert await Connection(tested).execute_many(sql, batch) == expected
    assert tables(tested) == tables(reference)


async def test_a_row_that_breaks_a_constraint_fails_the_call_and_a_savepoint_undoes_it(
    tmp_path: Path,
) -> None:
    raw = open_db(tmp_path / "new.db")
    raw.execute("INSERT INTO t (k, n) VALUES ('a', 1)")
    before = tables(raw)
    raw.execute("SAVEPOINT batch")
    with pytest.raises(sqlite3.IntegrityError):
        await Connection(raw).execute_many(PLAIN, [("b", 1, None), ("a", 2, None)])
    raw.execute("ROLLBACK TO batch")
    raw.execute("RELEASE batch")
    assert tables(raw) == before


def test_only_an_insert_of_one_row_of_placeholders_is_rewritten() -> None:
    assert _multi_row(PLAIN) == ("INSERT INTO t (k, n, note) VALUES ", "(?, ?, ?)", "", 3)
    for sql in (
        "UPDATE t SET n = ? WHERE k = ?",
        "DELETE FROM t WHERE k = ?",
        "INSERT INTO t (k, n, note) VALUES (?, ?, 'fixed')",
        "INSERT INTO t (k, n, note) SELECT ?, ?, ?",
    ):
        assert _multi_row(sql) is None, sql


async def test_batches_of_every_size_make_a_few_insert_statements(tmp_path: Path) -> None:
    """A connection keeps each statement it prepared: batches of 1 to 120 rows go in
    as statements of a few sizes (30 rows: 24 and 6), not one per batch size, and
    every row is stored as the plain executemany stores it."""
    reference, tested = open_db(tmp_path / "ref.db"), open_db(tmp_path / "new.db")
    rows_per_text: set[int] = set()
    tested.set_trace_callback(lambda sql: rows_per_text.add(sql.split(" VALUES ")[1].count("(")))
    for size in range(1, 121):
        batch = [(f"{size}-{i}", i, None) for i in range(size)]
        expected = reference.executemany(PLAIN, batch).rowcount
        assert await Connection(tested).execute_many(PLAIN, batch) == expected
    assert tables(tested) == tables(reference)
    assert rows_per_text == {n for n in INSERT_ROWS if n <= 96}
