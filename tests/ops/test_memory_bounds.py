"""What a worker keeps between requests stays within a bound on its total size, however
long it serves: the memo of podcasts' rows that episode uploads keep (in rows across
all users, not only in users), the SQLite reader connections (each with its own page
cache) a burst of concurrent reads opened, the memo of title sort keys (long titles
are not kept), and the memos of list cursors and reply URLs, which keep what was used
in the last half hour to hour (`recent.Recent`). A soak of two workers grew 22-25 MiB
an hour without these."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from podsync import recent
from podsync.config import Config
from podsync.errors import InvalidInput
from podsync.services import listing
from podsync.services.episodes import feed_memo
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage import sqlite as sqlite_engine
from podsync.storage import sqlite_connection
from podsync.storage.engine import create_engine
from podsync.store import users
from podsync.store.episode_feeds import Feed
from podsync.web import params
from podsync.web.keys import CONFIG
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
    assert memo("A1") == "a1"  # from the older generation, kept again
    assert set(memo.recent) == {"A4", "A1"}
    now[0] = recent.TURN_S  # a while later: the next miss turns
    memo("B1")
    assert set(memo.older) == {"A4", "A1"} and set(memo.recent) == {"B1"}
    assert len(memo) <= 2 * 3


def test_a_recent_memo_forgets_what_was_not_used_for_a_while() -> None:
    """A key stays between one and two turns after its last use; a quiet memo empties
    (two turns with nothing new); at most twice `kept` keys, whatever comes."""
    now = [0.0]
    memo: recent.Recent[int, str] = recent.Recent(100, turn_s=60.0, clock=lambda: now[0])
    memo.put(1, "one")
    now[0] = 59.0
    assert memo.get(1, None) == "one"
    memo.put(2, "two")
    now[0] = 61.0
    memo.put(3, "three")  # a turn: 1 and 2 are older now
    assert 1 in memo and 2 in memo and set(memo.recent) == {3}
    assert memo.get(2, None) == "two"  # used: back in the recent generation
    now[0] = 122.0
    memo.put(4, "four")  # a turn: 1 (not used since 59 s) goes
    assert memo.get(1, None) is None and memo.get(2, None) == "two"
    now[0] = 1000.0
    memo.put(5, "five")
    now[0] = 2000.0
    memo.put(6, "six")
    assert set(memo.recent) == {6} and set(memo.older) == {5}
    for n in range(10_000):
        memo.put(n + 10, str(n))
        assert len(memo) <= 200


def test_list_cursors_are_remembered_for_a_while_and_read_right_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cursors a worker signed or checked are kept within a bound; one it forgot
    still reads (its signature is checked again), and a forged one never does."""
    monkeypatch.setattr(listing, "CURSORS_KEPT", 8)
    cursors = listing.Cursors("a secret of the tests")
    first = cursors.make("page", 7, 1)
    made = [cursors.make("page", 7, n) for n in range(2, 100)]
    assert len(cursors._made) <= 16 and len(cursors._read) == 0
    assert not cursors.checked(first)  # made, never read here
    assert cursors.read(first, 7, ("page",)) == ("page", 1)
    for token in made:
        cursors.read(token, 7, ("page",))
    assert len(cursors._read) <= 16 and not cursors.checked(first)  # forgotten
    assert cursors.read(first, 7, ("page",)) == ("page", 1)  # and read again
    assert cursors.make("page", 7, 1) == first
    with pytest.raises(InvalidInput):
        cursors.read(first, 8, ("page",))  # another user's
    with pytest.raises(InvalidInput):
        cursors.read(first[:-2] + "xx", 7, ("page",))


def test_reply_urls_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSON of the next_since/next_cursor URLs a worker built: at most two
    generations of URLS_KEPT, each answer the one built afresh."""
    monkeypatch.setattr(params, "_urls", recent.Recent(4))
    app = web.Application()
    app[CONFIG] = Config()
    for n in range(50):
        request = make_mocked_request("GET", f"/api/v1/subscriptions?page={n}", app=app)
        made = params.json_url(request, f"cursor{n}")
        assert made == json.dumps(params.relative_url(request, f"cursor{n}"))
        assert params.json_url(request, f"cursor{n}") == made
        assert len(params._urls) <= 8


def test_each_worker_writes_a_heap_report_on_sigusr2_when_asked_for(tmp_path: Path) -> None:
    """The debugging aid (docs/development.md): with PODSYNC_DEBUG_HEAP_DIR, SIGUSR2 to a
    worker writes its report and its tracemalloc snapshot, and the worker serves on.
    The report appears whole: it was read empty once, between its file's creation
    and its text."""
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
            assert re.search(r"collector: collections by generation \[\d+, \d+, \d+\]", text)
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
        # Each report appeared whole (it was read as soon as it existed), renamed
        # from its partial file.
        assert not list(heap.glob("*.partial"))
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
