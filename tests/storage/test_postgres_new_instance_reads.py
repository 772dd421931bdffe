"""Reads on PostgreSQL read rows in proportion to what they answer, not to the user's
history (or the whole instance's feeds), on the statistics of a new instance: the
tables analysed while empty, autovacuum off (as in a new instance's first minute, or
for good on a cluster whose autovacuum is off or behind).

Each read runs on the plan PostgreSQL makes for its values and on the generic plan a
connection keeps after five runs of a statement, on those statistics and again after
an ANALYZE. Before, on a new instance's statistics: the aggregated gpodder pull
filtered the user's every action for each action of a page (12 million rows for
1,000 here), a podcast's pull read the user's every action (generic plan), an
episode's page read the user's every index entry, the New episodes' "played" probe
read every play of the user and every episode, the titles of a page of history and
the Subscriptions page's counts of items read every feed's items, each piece of a
Nextcloud pull sorted all of the user's actions after it, and the statistics page
read all of the person's totals once for each week and each month it shows."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, date
from typing import Any

import pytest

from podsync import timestamps
from podsync.episode_keys import url_hash
from podsync.feeds import url_key
from podsync.model import User
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.listening import PLAYS_CHUNK, ListeningService
from podsync.services.listening_stats import WEEKS, quarter, spans_of
from podsync.storage.engine import Connection
from podsync.storage.postgres import PostgresDatabase
from podsync.store import (
    episode_actions,
    episode_feeds,
    episode_pages,
    feed_info,
    inbox,
    listening,
    listening_totals,
    users,
)
from podsync.store.listening import RECENT_PLAYS, HistoryFilter
from tests.support.pg_rows import (
    Counted,
    analyse,
    autovacuum_off,
    episode,
    plays,
    podcast,
    rows_read,
)

PODCASTS = 300
UPLOADS = 40  # of PODCASTS plays each: 12,000 episodes and actions
HISTORY = PODCASTS * UPLOADS
TABLES = ("episodes", "episode_feeds", "episode_actions", "feed_episodes", "listening_totals")
# The seed's plays all fall in one hour: 4 quarters' totals for each podcast.
TOTALS = 4 * PODCASTS
OLD_QUARTERS = 40  # a year before: 12,000 rows of totals
A_YEAR_BEFORE = quarter(date(2025, 3, 3), UTC)

Read = Callable[[Connection], Awaitable[Any]]


async def _read(db: PostgresDatabase, read: Read, generic: bool) -> tuple[Any, dict[str, int]]:
    """What `read` answered, and the rows it read of each table."""
    async with db.snapshot() as conn:
        if generic:
            await conn.fetch_one("SELECT set_config('plan_cache_mode', 'force_generic_plan', true)")
        before = await rows_read(conn)
        answer = await read(conn)
        after = await rows_read(conn)
    return answer, {t: n - before.get(t, 0) for t, n in after.items() if t in TABLES}


async def _seed(db: PostgresDatabase) -> User:
    async with db.write() as conn:
        await autovacuum_off(conn)
        user = await users.create(conn, "alice", "x", timestamps.now_us())
        # Every podcast's feed as the fetcher keeps it, and as many of other people's.
        await conn.execute(
            "INSERT INTO feed_info (url_key, feed_url, next_try_at) "
            "SELECT 'k' || n, 'https://other.example/' || n, 0 "
            "FROM generate_series(1, ?) AS n",
            (PODCASTS,),
        )
        await conn.execute_many(
            "INSERT INTO feed_info (url_key, feed_url, next_try_at) VALUES (?, ?, 0)",
            [(url_key(podcast(n)), podcast(n)) for n in range(PODCASTS)],
        )
        await conn.execute(
            "INSERT INTO feed_episodes (url_key, episode_url, guid, title) "
            "SELECT f.url_key, f.feed_url || '/' || u, 'g' || u, 'title ' || u "
            "FROM feed_info f CROSS JOIN generate_series(0, ?) AS u",
            (UPLOADS - 1,),
        )
        await conn.execute(
            "UPDATE feed_episodes SET episode_url = "
            "replace(replace(episode_url, 'https://feeds.example/', 'https://media.example/'), "
            "'/rss.xml/', '/') || '.mp3' WHERE episode_url LIKE 'https://feeds.example/%'"
        )
    writes = EpisodeWrites(db)
    for upload in range(UPLOADS):
        await writes.upload(user.id, plays(upload, range(PODCASTS)))
    async with db.write() as conn:
        # A year before, listening of every podcast in OLD_QUARTERS quarters of a week
        # (outside the statistics' spans of the seed's week), finishing some.
        await conn.execute(
            "INSERT INTO listening_totals (user_id, quarter, feed_id, seconds, finished) "
            "SELECT ?, q.quarter, f.id, 600, q.quarter % 2 FROM episode_feeds f "
            "CROSS JOIN generate_series(?::bigint, ?::bigint, 13) AS q (quarter) "
            "WHERE f.user_id = ?",
            (user.id, A_YEAR_BEFORE, A_YEAR_BEFORE + 13 * (OLD_QUARTERS - 1), user.id),
        )
    return user


@pytest.mark.parametrize("analysed", [False, True], ids=["new", "analysed"])
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
async def test_reads_read_what_they_answer_on_a_new_instances_statistics(
    own_pg_database: str, generic: bool, analysed: bool
) -> None:
    async with PostgresDatabase(own_pg_database) as db:
        user = (await _seed(db)).id
        if analysed:
            async with db.write() as conn:
                await analyse(conn)
        async with db.read() as conn:
            head = await episode_actions.max_seq(conn, user)
            feed = await episode_feeds.feed_id(conn, user, url_key(podcast(7)))
            assert feed is not None
            wanted = await episode_feeds.episodes_by_url(
                conn,
                await episode_feeds.by_keys(conn, user, [url_key(podcast(7))]),
                {(url_key(podcast(7)), episode(7, 3)): url_hash(episode(7, 3))},
            )
        (episode_id, _), *_ = wanted.values()

        def pull(**kw: Any) -> Read:
            args: dict[str, Any] = {"window_after": 0, "after_seq": 0, "upto_seq": head}
            args |= {"feed": None, "device_id": None, "aggregated": False, "limit": 1000}
            args |= kw
            return lambda c: episode_actions.page(c, user, **args)

        ten = [url_key(podcast(n)) for n in range(10)]
        _, _, spans = spans_of(UTC, date(2026, 3, 2))  # the seed's week among the last
        weeks, months = spans[:WEEKS], spans[WEEKS:]
        fifty = [(url_key(podcast(n)), episode(n, 5)) for n in range(50)]
        reads: dict[str, tuple[Read, int, int]] = {
            # name: (the read, rows answered, rows it may read of a table)
            "aggregated pull": (pull(aggregated=True), 1000, 4 * 1000 + 10),  # and edges
            "a podcast's pull": (pull(feed=feed), UPLOADS, 4 * UPLOADS),
            "an episode's actions": (
                lambda c: episode_pages.episode_actions(c, user, episode_id, 20),
                1,
                10,
            ),
            "played items": (
                lambda c: inbox.played_items(c, user, ten),
                10 * UPLOADS,  # each episode's URL (the plays name no guid)
                4 * 10 * UPLOADS,
            ),
            "a Nextcloud pull's piece": (
                lambda c: episode_actions.received_page(c, user, 1000, head, 1000),
                1000,
                4 * 1000,
            ),
            "items of a page of podcasts": (
                lambda c: inbox.feed_summaries(c, [key for key, _ in fifty]),
                50,
                5 * 50 * UPLOADS,  # each feed's items, counted
            ),
            "titles of a page": (lambda c: feed_info.episode_titles(c, fifty, []), 50, 4 * 50),
            "a podcast's history": (
                lambda c: listening.podcast_actions(c, user, url_key(podcast(7)), 50),
                UPLOADS,
                4 * UPLOADS,
            ),
            "a podcast's devices": (
                lambda c: listening.podcast_devices(c, user, url_key(podcast(7))),
                1,
                4 * UPLOADS,
            ),
            "statistics' weeks (a podcast each)": (
                lambda c: listening_totals.listened(c, user, weeks),
                PODCASTS,
                3 * TOTALS,
            ),
            "statistics' months (none finished)": (
                lambda c: listening_totals.finishes(c, user, months),
                0,
                10,
            ),
        }
        for name, (read, answered, most) in reads.items():
            answer, read_rows = await _read(db, read, generic)
            assert len(answer) == answered, name
            for table, count in read_rows.items():
                assert count <= most < HISTORY, (name, table, read_rows)


@pytest.mark.parametrize("analysed", [False, True], ids=["new", "analysed"])
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
async def test_continue_listening_and_history_read_what_they_answer(
    own_pg_database: str, generic: bool, analysed: bool
) -> None:
    """Continue listening (on the Overview) and pages of history, through their
    service, which takes the keyed plan settings for its snapshot: before, on a new
    instance's statistics, each chunk of Continue listening read 48,000 entries and
    rows of the user's 12,000 actions, and a page of history 24,000; after an
    ANALYZE, a generic plan of the check for a newer page read the whole index of
    the episodes."""
    async with PostgresDatabase(own_pg_database) as db:
        user = await _seed(db)
        if analysed:
            async with db.write() as conn:
                await analyse(conn)
    # A setting of every connection of the pool (asyncpg sends a URL's unknown
    # parameters as settings).
    generic_plans = "?plan_cache_mode=force_generic_plan" * generic
    async with PostgresDatabase(own_pg_database + generic_plans) as db:
        counted = Counted(db)
        service = ListeningService(counted)  # type: ignore[arg-type]
        going = await service.continue_listening(user)
        assert going.in_progress  # every play stopped short of the end
        # No play is finished, so it reads chunks up to the latest RECENT_PLAYS plays,
        # each chunk with the edge's read (an index entry and a row a play to it).
        chunks = RECENT_PLAYS // PLAYS_CHUNK + 1
        most = chunks * (2 * RECENT_PLAYS + 4 * PLAYS_CHUNK)
        assert counted.read["episode_actions"] <= most < chunks * HISTORY, counted.read
        one_podcast = HistoryFilter(podcast_key=url_key(podcast(7)))
        for only in (
            HistoryFilter(),
            HistoryFilter(action="play"),
            HistoryFilter(device_id="phone"),
            one_podcast,
        ):
            page = await service.history(user, only, None, None)
            assert len(page.rows) == (UPLOADS if only is one_podcast else 50)
            read = {table: n for table, n in counted.read.items() if n}
            assert max(read.values()) <= 4 * 51 < HISTORY, (only, read)
            if page.older_than is not None:  # the second page, and the check for a newer one
                second = await service.history(user, only, page.older_than, None)
                assert second.newer_than is not None and len(second.rows) == 50
                read = {table: n for table, n in counted.read.items() if n}
                assert max(read.values()) <= 4 * 51, (only, read)
