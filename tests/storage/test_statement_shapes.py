"""A list of values goes into SQL at one of a few lengths (`podsync/store/value_lists.py`),
so that batches of every size make a few statements a query, not one a size: each
statement is prepared and kept by every connection, and a two-hour soak's workers
grew with them."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import pytest

from podsync.config import Config
from podsync.rules import Subscribe
from podsync.serve import heap_report
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.sync import ActionKey, SyncService
from podsync.storage import sqlite as sqlite_engine
from podsync.storage.engine import create_engine
from podsync.store import users
from podsync.store.value_lists import LENGTHS, in_list, padded


def test_a_list_is_padded_to_the_next_length_with_its_last_value() -> None:
    assert padded([]) == [] and in_list([], dialect="postgresql") == ("", [])
    assert padded(["a"]) == ["a"]
    assert padded([1, 2, 3, 4, 5]) == [1, 2, 3, 4, 5, 5]
    assert in_list([7, 8, 9, 10, 11], dialect="postgresql") == (
        "?,?,?,?,?,?",
        [7, 8, 9, 10, 11, 11],
    )
    # On SQLite one JSON array, whatever the length: one statement text a query.
    assert in_list([7, 8, "é"], dialect="sqlite") == (
        "SELECT value FROM json_each(?)",
        ['[7, 8, "é"]'],
    )
    assert in_list([7], dialect="sqlite") == ("?", [7])
    assert in_list([b"\x00", b"\x01"], dialect="sqlite") == ("?,?", [b"\x00", b"\x01"])
    assert len(padded(list(range(300)))) == 384
    assert len(padded(list(range(300)), most=300)) == 300  # a full chunk stays whole
    assert len(padded(list(range(1000)))) == 1024  # past the last length: its multiples
    lengths = {len(padded(list(range(n)))) for n in range(1, 513)}
    assert lengths == set(LENGTHS)
    grown = [len(padded(list(range(n)))) / n for n in range(1, 513)]
    assert max(grown) <= 1.5 and sum(grown) / len(grown) < 1.2  # a sixth on average


# A value in the SQL SQLite's trace shows (its parameters bound): a string or a number.
VALUE = re.compile(r"'(?:[^']|'')*'|\b\d+\b|X'[0-9A-F]*'")


def _texts(db: Any) -> set[str]:
    """The statement texts the writer runs from now on: SQLite's trace shows them
    with their parameters bound, which are put back as `?`."""
    seen: set[str] = set()
    writer: sqlite3.Connection = db._writer
    writer.set_trace_callback(lambda sql: seen.add(VALUE.sub("?", sql)))
    return seen


def _plays(n: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "podcast": f"https://shapes.example/{n}-{i}/feed.xml",
            "episode": f"https://shapes.example/{n}-{i}/1.mp3",
            "action": "play",
            "timestamp": "2026-01-01T00:00:00",
            "started": 0,
            "position": 10,
            "total": 600,
        }
        for i in range(count)
    ]


async def test_batches_of_sixty_sizes_make_a_few_statements_each(
    config: Config, create_user: Any
) -> None:
    await create_user("alice")
    db = create_engine(config.database)
    if not isinstance(db, sqlite_engine.Database):
        pytest.skip("counts the statements of SQLite's writer")
    await db.open()
    try:
        async with db.read() as conn:
            alice = (await users.require_by_name(conn, "alice")).id
        sync = SyncService(db, config.sync)
        uploads = EpisodeWrites(db, UploadBounds(config.gpodder))
        seen = _texts(db)
        for size in range(1, 61):
            urls = [f"https://shapes.example/{size}/{i}.xml" for i in range(size)]
            keys = [ActionKey(f"{size}-{i}", "subscribe") for i in range(size)]
            outcome = await sync.apply(alice, None, [Subscribe(feed_url=u) for u in urls], keys)
            assert all(r.entity is not None for r in outcome.results)
            assert (await uploads.upload(alice, _plays(size, size))).stored == size
        with_lists = {t for t in seen if " IN (" in t or "AS (VALUES" in t}
        # Each query with a list, at the lengths up to 64 (13 of them), not at 60 sizes.
        assert 0 < len(with_lists) <= 8 * 13, sorted(with_lists)
        # An IN list is one JSON array on SQLite: each such query has two texts at most
        # (a single value is a `?`), whatever the sizes of the batches.
        in_lists = [t for t in with_lists if "json_each" in t or re.search(r"IN \(\?[,)]", t)]
        families = {
            re.sub(r"\(\?(?:,\?)*\)|\(SELECT value FROM json_each\(\?\)\)", "L", t)
            for t in in_lists
        }
        assert in_lists and len(in_lists) <= 2 * len(families), sorted(in_lists)
    finally:
        await db.close()


async def test_the_writer_keeps_none_of_a_new_databases_schema_steps(tmp_path: Any) -> None:
    """Migrating a new database runs hundreds of statements (every schema step). The
    writer keeps each statement it runs, so they run on a connection of their own:
    the writer starts with the few it needs (its settings), not the steps'."""
    db = sqlite_engine.Database(str(tmp_path / "new.db"))
    await db.open()
    try:
        kept = heap_report.prepared_statements(db._writer)
        assert kept, "no statement seen: the handle was not read"
        steps = [t for t in kept if t.lstrip().upper().startswith(("CREATE", "ALTER", "UPDATE"))]
        assert not steps, steps
        assert len(kept) < 40, kept
    finally:
        await db.close()
