"""Lists of values in SQL: one statement a query on SQLite, a few lengths elsewhere.

Every distinct SQL text is a statement that each connection prepares and keeps
(`storage.sqlite_connection.STATEMENT_CACHE` a connection on SQLite, asyncpg's own
cache on PostgreSQL), and on SQLite a statement costs about 3 KiB plus 0.2 KiB a
parameter: a list of 1 to 500 values written at its own length made up to 500
statements for each query, prepared again on every connection as new lengths came
(a batch of 7 actions, then one of 23), and kept: a worker's memory grew for hours
with them. Padded to the next of `LENGTHS`, a query has a few texts at most; on SQLite an
`IN` list is one JSON array (`x IN (SELECT value FROM json_each(?))`), so the query
has one text, whatever the list's length: a soak showed each of a worker's SQLite
connections keeping a hundred statements and more of the same queries at their
lengths, 0.7-1 MiB a connection, prepared and freed again as lengths came and went.

The padding repeats the last value, which changes no `IN` answer; a query that
joins a `VALUES` list must not count or add up its rows (a repeated row is a
repeated match) and uses `padded` only when it collects them into a set or mapping.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

# Steps of a third to a half: a list grows by a sixth on average (a half at most),
# and a query has at most 18 texts (each with up to 512 values).
LENGTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def padded(values: Sequence[T], most: int = 0) -> list[T]:
    """`values` and its last value again up to the next of `LENGTHS`, or up to
    `most` when that comes first (the caller's chunk: a full chunk is one text
    more); past the last length, to a multiple of it. An empty list stays empty."""
    count = len(values)
    if count == 0:
        return []
    length = next((n for n in LENGTHS if n >= count), 0)
    if not length:
        last = LENGTHS[-1]
        length = -(-count // last) * last
    if most >= count:
        length = min(length, most)
    return [*values, *[values[-1]] * (length - count)]


# An IN list on SQLite: the values as one JSON array, a row each. SQLite compares
# them with the column's own affinity and collation, as it does a list of `?`s, and
# serves the IN from the column's index the same way.
_JSON_LIST = "SELECT value FROM json_each(?)"
# json.dumps with any argument of its own builds a new JSONEncoder on every call (a
# Python __init__ of nine arguments): one encoder, made once, writes the same text.
_TO_JSON = json.JSONEncoder(ensure_ascii=False).encode


def in_list(values: Sequence[T], most: int = 0, *, dialect: str) -> tuple[str, list[object]]:
    """(the inside of an `IN (...)`, the values to bind to it). On SQLite a list of
    strings and integers is one JSON array: one statement text for every length
    past one (a single value is a `?`, 5 us faster). Otherwise `?,?,...`, `padded`.
    An empty list stays empty (callers return early where `IN ()` cannot run)."""
    if not values:
        return "", []
    if dialect == "sqlite" and len(values) > 1 and all(type(v) in (str, int) for v in values):
        return _JSON_LIST, [_TO_JSON(list(values))]
    bound: list[object] = list(padded(values, most))
    return ",".join("?" * len(bound)), bound


def each_row(inner: str, alias: str, *, left: bool = False) -> str:
    """PostgreSQL: the join of `inner`, run once for each row before it (`inner`
    names that row's columns), as `alias`; with `left`, a row that finds nothing is
    kept with NULLs.

    Each row's lookup runs on its own: OFFSET 0 keeps the planner from making the
    lookups one join. Left to choose, on a new instance's statistics (the tables
    analysed while empty, until autovacuum's next ANALYZE) or on a connection's
    generic plan, it joined such lookups by reading a whole table, or all of the
    user's rows: 18 ms a sync batch at 30,000 action rows, 42.7 ms for 300 episodes
    at 200,000, every feed item of the server for a search of one feed's."""
    if left:
        return f"LEFT JOIN LATERAL ({inner} OFFSET 0) AS {alias} ON TRUE"
    return f"CROSS JOIN LATERAL ({inner} OFFSET 0) AS {alias}"


def each_key(keys: Sequence[tuple[str, str]], inner: str) -> str:
    """PostgreSQL: the rows `inner` finds for each key, the keys bound first as one
    array a column (`keys`: (name, SQL type) each; `inner` names them `k.name`, and
    its own parameters follow the arrays), each looked up on its own (`each_row`).
    One statement text for any number of keys, planned once per connection."""
    arrays = ", ".join(f"?::{sql_type}[]" for _, sql_type in keys)
    names = ", ".join(name for name, _ in keys)
    return f"SELECT t.* FROM unnest({arrays}) AS k ({names}) {each_row(inner, 't')}"
