"""What a worker keeps between requests stays within a bound on its total size, however
long it serves: the memo of podcasts' rows that episode uploads keep (in rows across
all users, not only in users), the SQLite reader connections (each with its own page
cache) a burst of concurrent reads opened, and the memo of title sort keys (long
titles are not kept). A soak of two workers grew 22-25 MiB an hour without these."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from podsync.config import Config
from podsync.services.episodes import feed_memo
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage import sqlite as sqlite_engine
from podsync.storage import sqlite_connection
from podsync.storage.engine import create_engine
from podsync.store import users
from podsync.store.episode_feeds import Feed
from tests.support.http_calls import call
from tests.support.workers_support import ServerTree


def _plays(user: str, first: int, count: int) -> list[dict[str, Any]]:
    """One play on an episode of each of `count` podcasts, numbered from `first`."""
    return [
        {
            "podcast": f"https://{user}.example/{n}/feed.xml",
            "episode": f"https://{user}.example/{n}/1.mp3",
            "action": "play",
            "timestamp": "2026-01-01T00:00:00",
            "started": 0,
            "position": 10,
            "total": 600,
        }
        for n in range(first, first + count)
    ]


async def test_the_episode_feed_memo_stays_within_its_bound_in_rows(
    config: Config, create_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed_memo, "PER_USER", 50)
    monkeypatch.setattr(feed_memo, "IN_ALL", 120)
    names = [f"user{i}" for i in range(4)]
    for name in names:
        await create_user(name)
    db = create_engine(config.database)
    await db.open()
    try:
        service = EpisodeWrites(db, UploadBounds(config.gpodder))
        async with db.read() as conn:
            ids = [(await users.require_by_name(conn, name)).id for name in names]
        for user_id, name in zip(ids, names, strict=True):
            for first in range(0, 90, 30):  # 90 podcasts each, 30 an upload
                upload = await service.upload(user_id, _plays(name, first, 30))
                assert upload.stored == 30
                assert service.feeds.rows <= 120
                assert all(len(known) <= 50 for known in service.feeds.users())
        assert service.feeds.rows == sum(len(k) for k in service.feeds.users())
        # Forgotten rows are looked up again: the same podcasts, no second row each.
        again = await service.upload(ids[0], _plays(names[0], 0, 30))
        assert again.stored == 30
        async with db.read() as conn:
            row = await conn.fetch_one(
                "SELECT count(*) FROM episode_feeds WHERE user_id = ?", (ids[0],)
            )
        assert row is not None and row[0] == 90
    finally:
        await db.close()


def _row(n: int) -> Feed:
    return Feed(n, f"https://p.example/{n}", f"https://p.example/{n}/", 0)


def test_the_episode_feed_memo_forgets_rows_no_upload_named_for_a_while() -> None:
    """Rows go between KEPT_S and twice that after the last upload that named them:
    a worker keeps the podcasts of the recent uploads, not of everything it served."""
    now = [0.0]
    memo = feed_memo.FeedMemo(clock=lambda: now[0])
    kept = feed_memo.KEPT_S
    memo.remember(1, {"a": _row(1), "b": _row(2)})
    memo.remember(2, {"c": _row(3)})
    now[0] = kept * 0.9
    assert set(memo.known(1)) == {"a", "b"} and memo.rows == 3
    now[0] = kept * 1.1  # a turn: the rows named before it are still known
    assert set(memo.known(1)) == {"a", "b"}
    memo.remember(1, {"a": _row(1)})  # named again: kept for another period
    now[0] = kept * 2.2  # the next turn: only what was named since the last stays
    assert set(memo.known(1)) == {"a"}
    assert dict(memo.known(2)) == {} and memo.rows == 1
    now[0] = kept * 4.5  # nothing named for two periods: nothing left
    assert dict(memo.known(1)) == {} and memo.rows == 0


def test_the_episode_feed_memo_counts_a_row_once_across_its_generations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feed_memo, "PER_USER", 3)
    now = [0.0]
    memo = feed_memo.FeedMemo(clock=lambda: now[0])
    memo.remember(1, {"a": _row(1), "b": _row(2), "c": _row(3)})
    now[0] = feed_memo.KEPT_S * 1.5
    memo.remember(1, {"b": _row(2), "d": _row(4)})  # b moves to the recent generation
    assert memo.rows == sum(len(rows) for rows in memo.users()) == 3
    assert set(memo.known(1)) == {"b", "c", "d"}  # a, the oldest named, went


async def test_readers_opened_by_a_burst_of_reads_close_after_it(config: Config) -> None:
    db = create_engine(config.database)
    await db.open()
    try:
        assert isinstance(db, sqlite_engine.Database)
        inside = asyncio.Event()
        entered = 0

        async def hold() -> None:
            nonlocal entered
            async with db.read() as conn:
                await conn.fetch_one("SELECT 1")
                entered += 1
                await inside.wait()

        burst = [asyncio.create_task(hold()) for _ in range(20)]
        for _ in range(200):
            if entered == 20:
                break
            await asyncio.sleep(0.01)
        assert len(db._all_readers) == 20  # twenty at once: twenty connections
        inside.set()
        await asyncio.gather(*burst)
        assert len(db._all_readers) == sqlite_engine.READERS_KEPT
        async with db.read() as conn:  # and reading goes on as before
            assert await conn.fetch_one("SELECT 1") is not None
    finally:
        await db.close()


def test_the_sort_key_memo_keeps_short_titles_only() -> None:
    memo = sqlite_connection._SortKeys()
    long_title = "The " + "very long title " * 500
    assert memo(long_title) == "very long title " * 500
    assert memo.recent == {}
    assert memo("The Daily") == "daily"
    assert memo.recent == {"The Daily": "daily"}
    assert memo(None) is None


def test_the_sort_key_memo_keeps_the_titles_sorted_lately(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two generations: a turn comes when the recent one is full or after a while,
    and drops the older; a key used again moves to the recent one."""
    monkeypatch.setattr(sqlite_connection, "SORT_KEYS_KEPT", 3)
    now = [0.0]
    memo = sqlite_connection._SortKeys(clock=lambda: now[0])
    for title in ("A1", "A2", "A3"):
        memo(title)
    memo("A4")  # the recent one was full: a turn
    assert set(memo.older) == {"A1", "A2", "A3"} and set(memo.recent) == {"A4"}
    memo("A1")  # from the older generation, kept again
    assert set(memo.recent) == {"A4", "A1"}
    now[0] = sqlite_connection.SORT_KEYS_TURN_S  # a while later: the next miss turns
    memo("B1")
    assert set(memo.older) == {"A4", "A1"} and set(memo.recent) == {"B1"}
    assert len(memo.recent) + len(memo.older) <= 2 * sqlite_connection.SORT_KEYS_KEPT


def test_each_worker_writes_a_heap_report_on_sigusr2_when_asked_for(tmp_path: Path) -> None:
    """The debugging aid (docs/development.md): with PODSYNC_DEBUG_HEAP_DIR, SIGUSR2 to a
    worker writes its report and its tracemalloc snapshot, and the worker serves on."""
    heap = tmp_path / "heap"
    heap.mkdir()
    env = {"PODSYNC_DEBUG_HEAP_DIR": str(heap), "PYTHONTRACEMALLOC": "2"}
    with ServerTree(tmp_path / "server", env=env) as tree:
        pids = list(tree.worker_pids().values())
        assert len(pids) == 2
        for pid in pids:
            os.kill(pid, signal.SIGUSR2)
        reports = [heap / f"heap-{pid}-1.txt" for pid in pids]
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in reports) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid, report in zip(pids, reports, strict=True):
            text = report.read_text()
            assert f"pid {pid} report 1" in text
            assert "sqlite3 connections:" in text and "traced:" in text, text
            assert (heap / f"heap-{pid}-1.tracemalloc").stat().st_size > 0
            # glibc's free blocks by size, with its XML kept beside the report
            assert re.search(r"malloc free blocks by size \(\d+ arenas\): [\d.]+ MiB", text), text
            assert re.search(r"main heap: [\d.]+ MiB resident of [\d.]+ mapped", text), text
            # tracemalloc's hooks hide Python's own allocator from its statistics
            assert "python's allocator: no figures of its arenas" in text, text
            assert "<malloc" in (heap / f"heap-{pid}-1.malloc.xml").read_text()
            # each open connection by SQLite's own count: page cache, schema, statements
            connections = re.findall(
                r"connection podsync\.db: cache \d+ KiB, schema (\d+) KiB", text
            )
            assert connections and all(int(schema) > 0 for schema in connections), text
        assert sorted(tree.alive()) == sorted([tree.proc.pid, *pids])  # type: ignore[union-attr]
        assert call("GET", f"{tree.base_url}/healthz").status == 200


def test_a_heap_report_says_how_full_pythons_arenas_are(tmp_path: Path) -> None:
    """Without tracemalloc, the report reads Python's own allocator: its arenas now
    and at the peak, and what its objects fill of them (what `allocated blocks`, a
    count, cannot say)."""
    heap = tmp_path / "heap"
    heap.mkdir()
    with ServerTree(tmp_path / "server", env={"PODSYNC_DEBUG_HEAP_DIR": str(heap)}) as tree:
        pid = next(iter(tree.worker_pids().values()))
        os.kill(pid, signal.SIGUSR2)
        report = heap / f"heap-{pid}-1.txt"
        deadline = time.monotonic() + 60
        while not report.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        text = report.read_text()
        found = re.search(
            r"python's allocator: (\d+) arenas of 1024 KiB \((\d+) at the peak\), "
            r"([\d.]+) MiB in objects, [\d.]+ free in used pools, [\d.]+ in unused pools",
            text,
        )
        assert found, text
        arenas, peak, in_objects = int(found[1]), int(found[2]), float(found[3])
        assert 0 < arenas <= peak and 0 < in_objects <= arenas, text
        assert call("GET", f"{tree.base_url}/healthz").status == 200
