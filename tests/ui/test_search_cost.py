"""What a search reads follows the person's own podcasts, never the server's: with
20,000 feed items of another person's feeds (every one with a word starting "c"), a
person with no subscriptions gets their (empty) answer without reading any of them,
and a person with one feed reads that feed's items only (on PostgreSQL on a new
instance's statistics and after an ANALYZE, each on the plan made for the values and
on a connection's generic plan, which read every feed's items before). SQLite: the
plan reads the person's subscriptions first, then their feeds' items by the url
key's index, and the statement's virtual machine does the same few steps however many items others
have; PostgreSQL: the backend's statistics count the feed items read."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from podsync import timestamps
from podsync.config import Config
from podsync.feeds import url_key
from podsync.rules import Subscribe
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine, create_engine
from podsync.store import episode_search, feed_info, inbox
from podsync.store.feed_info import FeedItem
from tests.support.migration_support import add_user
from tests.support.pg_rows import analyse, autovacuum_off, rows_read

OTHERS_ITEMS = 20_000
OWN_ITEMS = 40
FEEDS = 20
FEEDS_NOBODY_FOLLOWS = 20_000  # feeds the fetcher knows that nobody here follows


async def _seed(db: Engine, config: Config) -> tuple[int, int]:
    """(a person with no subscriptions, a person with one feed of OWN_ITEMS), beside
    another person with FEEDS feeds of OTHERS_ITEMS items in all, on a server that
    knows FEEDS_NOBODY_FOLLOWS more feeds."""
    if config.database.url:
        async with db.write() as conn:
            # A new instance's statistics until the test's ANALYZE: the tables analysed
            # empty by the migrations, and no autovacuum pass in between.
            await autovacuum_off(conn)
    async with db.write() as conn:
        await conn.execute(
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO feed_info (url_key, feed_url, next_try_at) "
            "SELECT 'gone.example/' || i, 'https://gone.example/' || i, 0 FROM n",
            (FEEDS_NOBODY_FOLLOWS,),
        )
    nobody, owner_id, other = [await add_user(db, n) for n in ("nobody", "owner", "other")]
    sync = SyncService(db, config.sync)
    feeds = [f"https://feeds.example/{n}.xml" for n in range(FEEDS)]
    await sync.apply(other, None, [Subscribe(feed_url=u) for u in feeds])
    own = "https://own.example/show.xml"
    await sync.apply(owner_id, None, [Subscribe(feed_url=own)])
    now = timestamps.now_us()
    per_feed = OTHERS_ITEMS // FEEDS
    async with db.write() as conn:
        for n, feed in enumerate([*feeds, own]):
            count = OWN_ITEMS if feed == own else per_feed
            await feed_info.add_feed(conn, url_key(feed), feed, now)
            rows = [
                (*FeedItem(
                    f"{feed}/e{i}.mp3", f"g{n}-{i}", f"Conversation {i} about cats", now - i,
                    600, None, "audio/mpeg", f"<p>Coffee and {'code' if i % 2 else 'cake'}</p>",
                ), i)
                for i in range(count)
            ]  # fmt: skip
            await feed_info.change_episodes(conn, url_key(feed), [], rows)
    return nobody, owner_id


async def _search_c(conn: Any, user_id: int) -> None:
    """A search's first page: the person's podcasts (their titles), then the items."""
    await episode_search.podcasts(conn, user_id)
    await episode_search.find(conn, user_id, ["c"], 31, 0)


@pytest.mark.both_engines
@pytest.mark.counts_rows
async def test_search_reads_the_persons_own_feed_items_only(config: Config) -> None:
    db = create_engine(config.database)
    await db.open()
    try:
        nobody, owner = await _seed(db, config)
        async with db.read() as conn:
            assert await episode_search.find(conn, nobody, ["c"], 31, 0) == []
            mine = await episode_search.find(conn, owner, ["c"], 100, 0)
            assert len(mine) == OWN_ITEMS
            assert len(await episode_search.find(conn, owner, ["code"], 100, 0)) == OWN_ITEMS // 2
            if conn.dialect == "sqlite":
                await _sqlite_work(conn, nobody, owner)
        if config.database.url:
            await _pg_visits_own_items(db, nobody, owner)  # a new instance's statistics
            async with db.write() as conn:
                await analyse(conn)
            await _pg_visits_own_items(db, nobody, owner)
    finally:
        await db.close()


async def _sqlite_work(conn: Any, nobody: int, owner: int) -> None:
    sql, params = episode_search.statement("sqlite", nobody, ["c"], None)
    plan = [row[3] for row in await conn.fetch_all(f"EXPLAIN QUERY PLAN {sql}", params)]
    reads = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
    assert reads[0].startswith("SEARCH s USING INDEX"), plan
    assert reads[0].endswith("(user_id=?)"), plan
    assert reads[1].startswith("SEARCH fe USING INDEX"), plan
    assert "(url_key=?)" in reads[1], plan
    assert len(reads) == 2, plan

    def steps(user_id: int) -> int:
        counted = [0]

        def count() -> int:
            counted[0] += 1
            return 0

        raw = conn.raw
        raw.set_progress_handler(count, 10)
        try:
            sql, params = episode_search.statement("sqlite", user_id, ["c"], None)
            raw.execute(sql + " LIMIT 31", params).fetchall()
        finally:
            raw.set_progress_handler(None, 10)
        return counted[0] * 10

    # A read of the others' items costs tens of instructions each (hundreds of
    # thousands in all); the person's own search costs what their feed costs.
    assert steps(nobody) < 200
    assert steps(owner) < 100 * OWN_ITEMS


@pytest.mark.both_engines
@pytest.mark.counts_rows
async def test_new_episodes_read_the_persons_own_feed_items_only(config: Config) -> None:
    """New episodes' candidates (a join of the person's subscriptions with their
    feeds' items, as a search's) on the same server."""
    db = create_engine(config.database)
    await db.open()
    try:
        nobody, owner = await _seed(db, config)
        async with db.read() as conn:
            assert await inbox.candidates(conn, nobody, 31) == []
            assert len(await inbox.candidates(conn, owner, 100)) == OWN_ITEMS
        if config.database.url:
            read = lambda conn, user_id: inbox.candidates(conn, user_id, 31)  # noqa: E731
            await _pg_visits_own_items(db, nobody, owner, read)
            async with db.write() as conn:
                await analyse(conn)
            await _pg_visits_own_items(db, nobody, owner, read)
    finally:
        await db.close()


async def _pg_visits_own_items(
    db: Engine, nobody: int, owner: int, read: Callable[[Any, int], Awaitable[Any]] = _search_c
) -> None:
    """On the plan made for the values and on a connection's generic plan: the feed
    items and the feeds read (rows and index entries, from the backend's pending
    statistics), an entry and a row each of the person's own at most."""
    for mode in ("force_custom_plan", "force_generic_plan"):
        for user_id, podcasts in ((nobody, 0), (owner, 1)):
            async with db.snapshot() as conn:
                await conn.fetch_one("SELECT set_config('plan_cache_mode', ?, true)", (mode,))
                before = await rows_read(conn)
                await read(conn, user_id)
                after = await rows_read(conn)
            read_rows = {t: after[t] - before.get(t, 0) for t in ("feed_episodes", "feed_info")}
            wanted = {"feed_episodes": 2 * OWN_ITEMS * podcasts, "feed_info": 2 * podcasts + 4}
            assert all(read_rows[t] <= wanted[t] for t in wanted), (mode, user_id, read_rows)
