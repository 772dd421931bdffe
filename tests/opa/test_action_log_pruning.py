"""The hourly pruning forgets action ids past their retention a chunk at a time, each
chunk in a short write of its own (an hour's big import went in one statement: 430 ms
of the event loop at 100,000 ids), on both engines: every id past the retention goes,
the oldest first, the ids of one batch together; the newer ones stay."""

from __future__ import annotations

from typing import Any

import pytest

from podsync import timestamps
from podsync.config import Config
from podsync.model import RecordedAction
from podsync.services import sync as sync_service
from podsync.services.sync import SyncService
from podsync.storage.engine import create_engine
from podsync.store import actions as action_log

pytestmark = pytest.mark.both_engines

DAY_US = 86_400_000_000
CHUNK = 100


def _ids(prefix: str, count: int, at: int) -> list[RecordedAction]:
    """`count` ids, ten to a batch (a batch's ids share their moment of receipt)."""
    return [
        RecordedAction(f"{prefix}-{n}", "applied", None, None, at + n // 10, None)
        for n in range(count)
    ]


async def test_ids_past_the_retention_go_a_chunk_a_write(
    config: Config, db_engine: str, create_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync_service, "PRUNE_CHUNK", CHUNK)
    alice, bob = (await create_user("alice")).id, (await create_user("bob")).id
    now = timestamps.now_us()
    old = now - (config.sync.action_id_retention_days + 1) * DAY_US
    async with create_engine(config.database) as db:
        async with db.write() as conn:
            await action_log.record_many(conn, alice, _ids("a-old", 250, old))
            await action_log.record_many(conn, bob, _ids("b-old", 45, old + 100))
            await action_log.record_many(conn, alice, _ids("a-new", 5, now - DAY_US))
        deleted: list[int] = []
        prune = action_log.prune

        async def counted(*args: Any) -> int:
            gone = await prune(*args)
            deleted.append(gone)
            return gone

        monkeypatch.setattr(action_log, "prune", counted)
        assert await SyncService(db, config.sync).prune_action_log(now) == 295
        # Whole batches of ten, about a chunk a write, the last one short.
        assert deleted == [100, 100, 95]
        async with db.read() as conn:
            left = await conn.fetch_all("SELECT action_id FROM actions ORDER BY action_id")
        assert [r[0] for r in left] == [f"a-new-{n}" for n in range(5)]
        assert await SyncService(db, config.sync).prune_action_log(now) == 0
