"""Values bound to SQLite statements: bytes and None have adapters of their own
(`storage/sqlite_connection.py`), so sqlite3 finds them in its table instead of
asking a class for `__adapt__` and building an AttributeError per value (three per
new subscription row), and they are stored as before: a blob, a NULL."""

from __future__ import annotations

import sqlite3

from podsync.storage import sqlite_connection


def test_bytes_and_none_are_adapted_as_themselves() -> None:
    for kind in (bytes, type(None)):
        adapter = sqlite3.adapters.get((kind, sqlite3.PrepareProtocol))
        assert adapter is sqlite_connection._as_is, kind


def test_bound_values_are_stored_as_before() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (v ANY) STRICT")
    values = [b"view", b"", None, 7, 1.5, "text", bytearray(b"ba")]
    conn.executemany("INSERT INTO t (v) VALUES (?)", [(v,) for v in values])
    got = conn.execute("SELECT v, typeof(v) FROM t ORDER BY rowid").fetchall()
    assert got == [
        (b"view", "blob"),
        (b"", "blob"),
        (None, "null"),
        (7, "integer"),
        (1.5, "real"),
        ("text", "text"),
        (b"ba", "blob"),
    ]
