"""The sync rules load the entities a batch can touch with one query
(`store.subscriptions.find_matching`); on SQLite, which has no statistics, each of
its IN lists must be served by that column's own index, never by reading every row
of the user (a sync_id list of two or more once took an index on user_id alone)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from podsync.storage.migrations.sqlite import migrate
from podsync.store import subscriptions


class Recording:
    """A Connection that runs nothing and keeps the SQL it was given."""

    dialect = "sqlite"

    def __init__(self) -> None:
        self.statements: list[tuple[str, list[Any]]] = []

    async def fetch_all(self, sql: str, params: Any = ()) -> list[Any]:
        self.statements.append((sql, list(params)))
        return []


@pytest.mark.parametrize("count", [1, 2, 30, 600])
async def test_each_in_list_uses_its_own_index(tmp_path: Path, count: int) -> None:
    raw = sqlite3.connect(tmp_path / "plan.db")
    migrate(raw)
    ids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(count)]
    keys = [f"example.com/{i}" for i in range(count)]
    recording = Recording()
    await subscriptions.find_matching(recording, 1, ids, keys, ids)  # type: ignore[arg-type]
    assert recording.statements
    for sql, params in recording.statements:
        plan = [row[3] for row in raw.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
        # The list itself (a JSON array on SQLite) is read row by row: that scan is its own.
        searches = [
            step
            for step in plan
            if step.startswith(("SEARCH", "SCAN")) and not step.startswith("SCAN json_each")
        ]
        assert searches, plan
        for step in searches:
            assert step.startswith("SEARCH subscriptions USING INDEX"), plan
            assert (
                "(sync_id=?)" in step
                or "(url_key=? AND user_id=?)" in step
                or "(user_id=? AND guid=?)" in step
            ), plan
    raw.close()
