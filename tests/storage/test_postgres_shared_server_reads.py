"""On a shared PostgreSQL server, what reads a person's podcasts with their feeds
(the fetcher's titles, the New episodes count and list, a search, the Subscriptions
page, the OPML export, the artwork store's share) reads their own feeds, not the
server's: many people of 50 podcasts each, 20,000 feeds known, on a new instance's
statistics (the tables analysed while empty, autovacuum off) and after an ANALYZE,
each on the plan made for its values and on a connection's generic plan.

Before, on a new instance's statistics, the list of a person's podcasts a search
starts with (`episode_search.podcasts`) took the person for a two-hundredth of the
subscriptions and joined their podcasts with every feed of the server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from podsync import timestamps
from podsync.config import SyncConfig
from podsync.rules import Subscribe
from podsync.services.sync import SyncService
from podsync.storage.engine import Connection
from podsync.storage.postgres import PostgresDatabase
from podsync.store import (
    artwork,
    browse,
    episode_search,
    inbox,
    subscription_stream,
    subscriptions,
    users,
)
from tests.support.pg_rows import analyse, autovacuum_off, rows_read

PEOPLE = 200
PODCASTS = 50  # each person's
FEEDS = 20_000
ITEMS = 5  # a feed's

Read = Callable[[Connection], Awaitable[Any]]


def _feed(n: int) -> str:
    return f"https://feeds.example/{n}/rss.xml"


async def _seed(db: PostgresDatabase) -> int:
    """The person in the middle of PEOPLE, each following PODCASTS of FEEDS."""
    async with db.write() as conn:
        await autovacuum_off(conn)
        await conn.execute(
            "INSERT INTO feed_info (url_key, feed_url, title, next_try_at, fetched_at) "
            "SELECT 'feeds.example/' || n || '/rss.xml', "
            "'https://feeds.example/' || n || '/rss.xml', 'title ' || n, 0, 1000000 "
            "FROM generate_series(0, ?) AS n",
            (FEEDS - 1,),
        )
        await conn.execute(
            "INSERT INTO feed_episodes (url_key, episode_url, guid, title, published_at) "
            "SELECT f.url_key, f.feed_url || '/' || e, 'g' || e, 'episode ' || e, "
            "4102444800000000 - e FROM feed_info f CROSS JOIN generate_series(1, ?) AS e",
            (ITEMS,),
        )
    sync = SyncService(db, SyncConfig())
    people = []
    for n in range(PEOPLE):
        async with db.write() as conn:
            person = await users.create(conn, f"p{n}", "x", timestamps.now_us())
        people.append(person.id)
        feeds = [Subscribe(feed_url=_feed((n * PODCASTS + k) % FEEDS)) for k in range(PODCASTS)]
        await sync.apply(person.id, None, feeds)
    return people[PEOPLE // 2]


async def test_a_persons_podcasts_are_read_with_their_own_feeds(own_pg_database: str) -> None:
    async with PostgresDatabase(own_pg_database) as db:
        me = await _seed(db)
        reads: dict[str, Read] = {
            "New episodes' count stamp": lambda c: inbox.count_stamp(c, me),
            "New episodes' candidates": lambda c: inbox.candidates(c, me, 31),
            "a search's podcasts": lambda c: episode_search.podcasts(c, me),
            "a search's items": lambda c: episode_search.find(c, me, ["episode"], 31, 0),
            "the Subscriptions page": lambda c: browse.subscriptions_page(
                c, me, None, False, 0, PODCASTS
            ),
            "the Subscriptions page, searched": lambda c: browse.subscriptions_page(
                c, me, "title", False, 0, PODCASTS
            ),
            "the OPML export": lambda c: subscriptions.feeds_after(c, me, False, 0, 500),
            "the simple API's list": lambda c: subscription_stream.subscribed_titles(c, me),
            "the artwork's share": lambda c: artwork.used_by(c, me),
        }
        # An index entry and a row of each of the person's podcasts, feeds and items,
        # twice for the Subscriptions page (its count, then its page), and a few more.
        most = {
            "subscriptions": 4 * PODCASTS + 10,
            "feed_info": 4 * PODCASTS + 10,
            "feed_episodes": 2 * PODCASTS * ITEMS + 10,
        }
        for analysed in (False, True):
            if analysed:
                async with db.write() as conn:
                    await analyse(conn)
            for mode in ("force_custom_plan", "force_generic_plan"):
                for name, read in reads.items():
                    async with db.snapshot() as conn:
                        await conn.fetch_one(
                            "SELECT set_config('plan_cache_mode', ?, true)", (mode,)
                        )
                        before = await rows_read(conn)
                        await read(conn)
                        after = await rows_read(conn)
                    got = {t: after.get(t, 0) - before.get(t, 0) for t in most}
                    assert all(got[t] <= most[t] for t in most), (name, analysed, mode, got)
