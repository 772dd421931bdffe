"""Group commit in Database.write(): concurrent writers share a COMMIT, each block is
still atomic on its own, and nobody is answered before their block is on disk."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from podsync.storage.sqlite import MAX_GROUP, Database
from podsync.storage.sqlite_checkpoint import CHECKPOINT_WAL_BYTES

SCHEMA = "CREATE TABLE IF NOT EXISTS marks (name TEXT PRIMARY KEY) STRICT"


def committed_names(path: str) -> set[str]:
    """What another connection (another process would see the same) finds on disk."""
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM marks")}


async def open_db(tmp_path: Path) -> Database:
    db = Database(str(tmp_path / "group.db"))
    await db.open()
    async with db.write() as conn:
        await conn.execute(SCHEMA)
    return db


async def insert(db: Database, name: str, fail: bool = False) -> str:
    async with db.write() as conn:
        await conn.execute("INSERT INTO marks (name) VALUES (?)", (name,))
        await asyncio.sleep(0)  # let the other writers queue up behind this one
        if fail:
            raise RuntimeError(f"{name} fails after writing")
    # Returned: the row must already be visible to any other connection.
    assert name in committed_names(db.path)
    return name


async def test_concurrent_writers_share_commits_and_each_returns_after_its_commit(
    tmp_path: Path,
) -> None:
    db = await open_db(tmp_path)
    try:
        before = db.commits
        names = [f"w{i}" for i in range(40)]
        assert await asyncio.gather(*(insert(db, n) for n in names)) == names
        commits = db.commits - before
        # 40 writers queued at once: far fewer COMMITs than writers, but no group
        # larger than MAX_GROUP.
        assert 40 / MAX_GROUP <= commits < 10
        assert committed_names(db.path) == set(names)
    finally:
        await db.close()


async def test_a_failing_block_rolls_back_alone_and_its_group_still_commits(
    tmp_path: Path,
) -> None:
    db = await open_db(tmp_path)
    try:
        outcomes = await asyncio.gather(
            insert(db, "a"),
            insert(db, "b", fail=True),
            insert(db, "c"),
            insert(db, "d", fail=True),
            insert(db, "e"),
            return_exceptions=True,
        )
        assert outcomes[0::2] == ["a", "c", "e"]
        assert [str(e) for e in outcomes[1::2]] == [
            "b fails after writing",
            "d fails after writing",
        ]
        assert committed_names(db.path) == {"a", "c", "e"}
        # The writer is left outside any transaction, ready for the next one.
        await insert(db, "f")
        assert committed_names(db.path) == {"a", "c", "e", "f"}
    finally:
        await db.close()


async def test_a_block_that_breaks_the_transaction_fails_its_whole_group(
    tmp_path: Path,
) -> None:
    """When SQLite ends the group transaction itself, no writer of that group may be
    told its block committed."""
    db = await open_db(tmp_path)
    try:

        async def ends_the_transaction() -> None:
            async with db.write() as conn:
                await conn.execute("INSERT INTO marks (name) VALUES ('x')")
                await conn.execute("ROLLBACK")  # what SQLite does after SQLITE_FULL

        outcomes = await asyncio.gather(
            insert(db, "before"), ends_the_transaction(), return_exceptions=True
        )
        assert all(isinstance(o, sqlite3.Error) for o in outcomes), outcomes
        assert committed_names(db.path) == set()
        await insert(db, "after")
        assert committed_names(db.path) == {"after"}
    finally:
        await db.close()


async def test_a_writer_cancelled_while_queued_does_not_strand_the_group(
    tmp_path: Path,
) -> None:
    db = await open_db(tmp_path)
    try:
        release = asyncio.Event()

        async def holder() -> None:
            async with db.write() as conn:
                await conn.execute("INSERT INTO marks (name) VALUES ('held')")
                await release.wait()

        first = asyncio.create_task(holder())
        await asyncio.sleep(0.05)
        queued = asyncio.create_task(insert(db, "queued"))
        await asyncio.sleep(0.05)
        # The holder sees a writer waiting and leaves the group open for it; that
        # writer is cancelled after the lock is handed on but before it runs. The
        # group must commit anyway. (White-box: poll for that moment, one loop turn
        # at a time, so the cancel lands in the gap.)
        release.set()
        while not (db._group and not db._write_lock.locked()):  # noqa: ASYNC110
            await asyncio.sleep(0)
        queued.cancel()
        await asyncio.wait_for(first, timeout=5)
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert committed_names(db.path) == {"held"}
    finally:
        await db.close()


async def test_writers_cancelled_at_any_step_leave_the_writer_usable(tmp_path: Path) -> None:
    """Cancel writers at every point of their way (BEGIN, SAVEPOINT, the block,
    RELEASE, COMMIT): each either committed whole or not at all, and the next
    write still works (no transaction left open on the shared connection)."""
    db = await open_db(tmp_path)
    try:
        for writers in (1, 3):
            for turns in range(40):
                tasks = [
                    asyncio.create_task(insert(db, f"w{writers}-t{turns}-{i}"))
                    for i in range(writers)
                ]
                for _ in range(turns):
                    await asyncio.sleep(0)
                victim = turns % writers
                tasks[victim].cancel()
                outcomes = await asyncio.gather(*tasks, return_exceptions=True)
                for i, outcome in enumerate(outcomes):
                    name = f"w{writers}-t{turns}-{i}"
                    if i == victim and isinstance(outcome, asyncio.CancelledError):
                        continue
                    # Everyone else wrote and committed, whatever the victim left.
                    assert outcome == name, (turns, outcome)
        await insert(db, "after")
        names = committed_names(db.path)
        assert "after" in names
        async with db.read() as conn:
            rows = await conn.fetch_all("SELECT count(*) FROM marks")
        assert next(iter(rows))[0] == len(names)
    finally:
        await db.close()


async def test_the_wal_is_checkpointed_off_the_writer(tmp_path: Path) -> None:
    """The writer never checkpoints in its COMMIT (wal_autocheckpoint = 0); the
    checkpointer thread copies the WAL into the database file once it is large."""
    db = await open_db(tmp_path)
    try:
        assert db._writer is not None
        assert db._writer.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        before = _size(db.path)
        blob = "x" * 3000
        n = 0
        while _size(db.path + "-wal") < CHECKPOINT_WAL_BYTES:
            async with db.write() as conn:
                await conn.execute_many(
                    "INSERT INTO marks (name) VALUES (?)",
                    [(f"{n}-{i}-{blob}",) for i in range(50)],
                )
            n += 1
        await insert(db, "last")  # this COMMIT finds the WAL large and starts it
        assert db._checkpointer is not None and db._checkpointer._running is not None
        await db._checkpointer._running
        assert _size(db.path) > before + CHECKPOINT_WAL_BYTES // 2
    finally:
        await db.close()


def _size(path: str) -> int:
    return Path(path).stat().st_size
