"""A long write lets the process's other requests in (`storage.loop_share`): an app's
upload of thousands of plays gives the event loop a pass every few milliseconds of
its parse, lookups, rows and statistics, instead of holding it from the body to the
COMMIT. Outside such a write nothing yields where it did not before.

The passes come every `HOLD_S` of work; the tests set it to 0 (a pass at every
check), so that what they show does not depend on the machine's speed.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.config import Config, GpodderConfig
from podsync.services.episodes import writes as episode_writes
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.items import parse_item
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage import loop_share
from podsync.storage.engine import create_engine
from podsync.storage.sqlite_connection import Connection
from podsync.store import episode_actions, listening_totals
from tests.support.gpodder_support import basic

PLAYS = 2_000


def plays(count: int, first: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "podcast": f"https://p{n % 40}.example/feed.xml",
            "episode": f"https://p{n % 40}.example/{n}.mp3",
            "action": "play",
            "timestamp": "2026-01-01T00:00:00",
            "started": 0,
            "position": 10 + n % 600,
            "total": 3600,
            "device": "phone",
        }
        for n in range(first, first + count)
    ]


class Others:
    """Another task of the loop, counting the times it got to run."""

    def __init__(self) -> None:
        self.runs = 0
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.runs += 1
            await asyncio.sleep(0)

    def stop(self) -> None:
        self._task.cancel()


def busy(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


async def test_outside_a_long_write_no_pass_is_given() -> None:
    others = Others()
    await asyncio.sleep(0)
    before = others.runs
    for _ in range(5):
        busy(loop_share.HOLD_S * 2)
        await loop_share.share()
    assert others.runs == before  # nothing yielded
    assert loop_share.passes() == 0
    others.stop()


async def test_a_long_write_gets_a_pass_once_it_held_the_loop_long_enough() -> None:
    others = Others()
    await asyncio.sleep(0)
    with loop_share.sharing():
        before = others.runs
        await loop_share.share()  # just started: not due
        assert others.runs == before and loop_share.passes() == 0
        busy(loop_share.HOLD_S * 2)
        assert loop_share.due()
        await loop_share.share()
        assert others.runs > before and loop_share.passes() == 1
        assert not loop_share.due()  # the clock starts again after a pass
        with loop_share.sharing():  # nested: the outer one's clock and count
            busy(loop_share.HOLD_S * 2)
            await loop_share.share()
            assert loop_share.passes() == 2
    assert loop_share.passes() == 0 and not loop_share.due()
    others.stop()


async def test_many_rows_are_written_a_statement_at_a_time_with_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """execute_many past SHARED_ROWS rows on the loop: multi-row INSERTs, and a
    statement of another shape in pieces, give passes between their statements and
    write and count every row as one step would."""
    monkeypatch.setattr(loop_share, "HOLD_S", 0.0)
    raw = sqlite3.connect(tmp_path / "rows.db", isolation_level=None)
    raw.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    conn = Connection(raw)
    rows = [(n, n * 2) for n in range(1, 1001)]
    others = Others()
    with loop_share.sharing():
        inserted = await conn.execute_many("INSERT INTO t (id, v) VALUES (?, ?)", rows)
        after_insert = loop_share.passes()
        updated = await conn.execute_many(
            "UPDATE t SET v = v + 1 WHERE id = ?", [(n,) for n in range(1, 1001)]
        )
        after_update = loop_share.passes()
    others.stop()
    assert (inserted, updated) == (1000, 1000)
    assert after_insert >= 3  # 1,000 rows of 2 values: at least four statements
    assert after_update - after_insert >= 3  # four pieces of SHARED_ROWS rows
    assert others.runs >= after_update
    assert raw.execute("SELECT count(*), sum(v) FROM t").fetchone() == (1000, 1000 * 1001 + 1000)
    # Outside a long write the same calls run in one step each, and count the same.
    raw.execute("DELETE FROM t")
    assert await conn.execute_many("INSERT INTO t (id, v) VALUES (?, ?)", rows) == 1000
    assert loop_share.passes() == 0
    raw.close()


@pytest.mark.both_engines
async def test_another_request_is_answered_while_a_big_upload_is_being_stored(
    gp: TestClient[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """bob's GET, sent once alice's upload of 2,000 plays has started its lookups, is
    answered before the upload counts its plays into the statistics: the write gave
    the loop passes between its steps. Before, on SQLite, the write ran from its
    lookups to its COMMIT in one step of the loop, and bob waited for all of it."""
    monkeypatch.setattr(loop_share, "HOLD_S", 0.0)
    assert (await gp.get("/api/2/devices/bob.json", headers=basic("bob"))).status == 200
    events: list[str] = []
    looking = asyncio.Event()
    resolve, count_plays = episode_writes.episodes.resolve, listening_totals.count_plays

    async def resolve_seen(*args: Any, **kwargs: Any) -> Any:
        events.append("alice's lookups")
        looking.set()
        return await resolve(*args, **kwargs)

    async def count_seen(*args: Any, **kwargs: Any) -> Any:
        events.append("alice's statistics")
        return await count_plays(*args, **kwargs)

    monkeypatch.setattr(episode_writes.episodes, "resolve", resolve_seen)
    monkeypatch.setattr(episode_writes.listening_totals, "count_plays", count_seen)

    async def bob() -> None:
        await looking.wait()
        response = await gp.get("/api/2/devices/bob.json", headers=basic("bob"))
        assert response.status == 200
        events.append("bob answered")

    asking = asyncio.create_task(bob())
    response = await gp.post("/api/2/episodes/alice.json", json=plays(PLAYS), headers=basic())
    assert response.status == 200, await response.text()
    await asking
    assert events == ["alice's lookups", "bob answered", "alice's statistics"]
    pulled = await gp.get("/api/2/episodes/alice.json?since=0", headers=basic())
    assert len((await pulled.json())["actions"]) == PLAYS


async def test_a_write_cancelled_at_a_pass_stores_nothing_and_its_group_still_commits(
    config: Config, create_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass is a point where the write's task may be cancelled (its client gone):
    its block is rolled back to its savepoint, and a write that queued behind it in
    the same group transaction commits."""
    monkeypatch.setattr(loop_share, "HOLD_S", 0.0)
    alice = (await create_user("alice")).id
    bob = (await create_user("bob")).id
    db = create_engine(config.database)
    await db.open()
    try:
        writes = EpisodeWrites(db, UploadBounds(GpodderConfig()))
        now = timestamps.now_us()
        storing = asyncio.Event()
        store = episode_writes.episodes.store

        async def store_seen(*args: Any, **kwargs: Any) -> Any:
            storing.set()
            return await store(*args, **kwargs)

        monkeypatch.setattr(episode_writes.episodes, "store", store_seen)
        parsed = [parse_item(item, now, {}) for item in plays(PLAYS)]
        big = asyncio.create_task(writes.record(alice, parsed, now))
        await storing.wait()
        small = asyncio.create_task(writes.record(bob, parsed[:3], now))
        await asyncio.sleep(0)  # bob's write queues for the write lock
        big.cancel()
        with pytest.raises(asyncio.CancelledError):
            await big
        assert (await small).added == 3
        async with db.read() as conn:
            assert await episode_actions.max_seq(conn, alice) == 0
            assert await episode_actions.count_for_user(conn, alice) == 0
            assert await episode_actions.count_for_user(conn, bob) == 3
        again = await writes.record(alice, parsed, now)  # the database writes on
        assert again.added == PLAYS
    finally:
        await db.close()
