"""An episode upload on PostgreSQL reads rows in proportion to what it names, not to
what the user holds, on the statistics of a new instance.

The migrations ANALYZE every table while it is empty, and autovacuum analyses a
table again only once it has grown past a threshold (and never where it is off, or
behind). On those statistics, PostgreSQL, left to choose, joined an upload's 300
(podcast, URL hash) pairs to the episodes by reading the whole table: 42.7 ms a
chunk at 200,000 episodes, against 1.24 ms through the index."""

from __future__ import annotations

from podsync import timestamps
from podsync.config import GpodderConfig
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.items import parse_item
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage.postgres import PostgresDatabase
from podsync.store import users
from tests.support.pg_rows import Counted, autovacuum_off, plays

PODCASTS = 300
UPLOADS = 40  # of PODCASTS plays each: 12,000 episodes and actions
TABLES = ("episodes", "episode_feeds", "episode_actions")


async def test_an_upload_reads_what_it_names_on_a_new_instances_statistics(
    own_pg_database: str,
) -> None:
    async with PostgresDatabase(own_pg_database) as db:
        async with db.write() as conn:
            await autovacuum_off(conn)
            user = await users.create(conn, "alice", "x", timestamps.now_us())
        writes = EpisodeWrites(db, UploadBounds(GpodderConfig()))
        for upload in range(UPLOADS):
            await writes.upload(user.id, plays(upload, range(PODCASTS)))
        # Played again later: every podcast and episode is known, the actions new.
        now = timestamps.now_us()
        again = [parse_item(i, now, {}) for i in plays(UPLOADS // 2, range(PODCASTS))]
        for item in again:
            item.position = 3000
        # A worker that does not remember the user's podcasts looks them up too (its
        # count of the user's actions, which reads them all, is taken once a minute).
        counted = Counted(db)
        fresh = EpisodeWrites(counted, writes.bounds)  # type: ignore[arg-type]
        done = await fresh.record(user.id, again, now)
        assert done.added == PODCASTS
        read = counted.read
        # Each of the 300 episodes, its podcast, its earlier play and the new action
        # through their keys a few times over (the duplicate check, the statistics'
        # earlier plays, the action bound), an index entry and a row each, whatever
        # the user holds.
        stored = UPLOADS * PODCASTS
        for table in TABLES:
            assert read.get(table, 0) <= 10 * PODCASTS < stored, (table, read)
