"""New episodes' count is on every signed-in page (the navigation), so what it reads
must follow the episodes asked about, never the person's whole history: the played
episodes of a podcast are found by each episode's own actions."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from podsync.config import Config
from podsync.storage.engine import create_engine
from podsync.store import inbox


async def test_played_items_read_each_episodes_own_actions(
    config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = create_engine(config.database)
    await db.open()
    statements: list[str] = []
    try:
        async with db.read() as conn:
            fetch_all = type(conn).fetch_all

            async def kept(self: Any, sql: str, params: Any = ()) -> Any:
                statements.append(sql)
                return await fetch_all(self, sql, params)

            monkeypatch.setattr(type(conn), "fetch_all", kept)
            assert await inbox.played_items(conn, 1, ["example.com/feed"]) == set()
    finally:
        await db.close()
    assert len(statements) == 1
    raw = sqlite3.connect(config.database.path)
    try:
        plan = [
            row[3] for row in raw.execute("EXPLAIN QUERY PLAN " + statements[0], (1, "k", 1, 1))
        ]
    finally:
        raw.close()
    actions = [step for step in plan if " a " in f" {step} "]
    assert actions == ["SEARCH a USING INDEX episode_actions_episode (episode_id=?)"], plan
