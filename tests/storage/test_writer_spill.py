"""The writer keeps a group's changed pages in memory up to WRITER_SPILL_PAGES, then
spills as SQLite does by default: a group of a few sync batches writes each page to
the log once, at its COMMIT, and a very large transaction still has a bounded cache."""

from __future__ import annotations

from pathlib import Path

from podsync.storage.sqlite import Database
from podsync.storage.sqlite_connection import CACHE_KIB, WRITER_SPILL_PAGES

PAGE = 4096


def log_bytes(path: str) -> int:
    return Path(path + "-wal").stat().st_size


async def _log_growth_within(tmp_path: Path, pages: int) -> int:
    """Bytes the log grew by while a write block changed about `pages` pages, before
    its COMMIT."""
    db = Database(str(tmp_path / "spill.db"))
    await db.open()
    try:
        async with db.write() as conn:
            await conn.execute("CREATE TABLE blobs (body BLOB NOT NULL) STRICT")
        async with db.write() as conn:
            before = log_bytes(db.path)
            for _ in range(pages):
                await conn.execute("INSERT INTO blobs (body) VALUES (randomblob(3500))")
            grown = log_bytes(db.path) - before
        async with db.read() as conn:
            assert (await conn.fetch_one("SELECT count(*) FROM blobs"))[0] == pages
        return grown
    finally:
        await db.close()


async def test_a_group_past_the_cache_size_is_not_spilled(tmp_path: Path) -> None:
    over_the_cache = CACHE_KIB * 1024 // PAGE * 2  # about 1,000 pages
    assert over_the_cache < WRITER_SPILL_PAGES
    assert await _log_growth_within(tmp_path, over_the_cache) == 0


async def test_a_transaction_past_the_spill_threshold_still_spills(tmp_path: Path) -> None:
    # The number is a threshold, not the boolean OFF (SQLite reads it modulo 256 too).
    assert WRITER_SPILL_PAGES % 256 != 0
    assert await _log_growth_within(tmp_path, WRITER_SPILL_PAGES + 500) > 0
