"""The background task that keeps feed titles, websites, artwork and episode titles
fresh (`[feeds] fetch_metadata = true`).

Each pass: notice the feeds of subscriptions changed since the last pass (any
process's), claim the feeds that are due and still subscribed (a claim in the
database, so several server processes on one database fetch each feed once), fetch
a few at a time, parse in one worker thread (a person's Subscribe and Refresh in
threads of their own, so that they never wait behind a pass), and record the outcomes of a claimed
batch in one write (the one that claims the next batch). A feed is fetched at most
once per `refresh_hours` whoever subscribes to it; a failure is recorded with its
reason and tried again after a backoff that doubles per failure. When a host's name
does not resolve or its port refuses connections, the pass's other feeds on it fail
the same way without a lookup each (`http.HostFaults`); failures are logged a line
each, or summed up when many come at once (`failures.FailureLog`).

Only the `feed_info` and `feed_episodes` tables are written: the subscriptions, the
change feed and everything an app syncs stay as they are, whatever a feed holds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from podsync import timestamps
from podsync.services.feeds import NotAFeed, claims, order, refusals
from podsync.services.feeds.artwork import ArtworkKeeper, Found
from podsync.services.feeds.failures import FailureLog, shown
from podsync.services.feeds.http import FeedClient, Fetched, FetchError, HostFaults
from podsync.storage.engine import Connection, Engine
from podsync.store import feed_claims
from podsync.store import feed_info as store

log = logging.getLogger("podsync.feeds")

HOUR_US = 3_600_000_000
MAX_BACKOFF_US = 7 * 24 * HOUR_US
# A claimed feed is not claimed again for this long: the fetch ends long before (its
# time limit), unless the process died, and then another process picks it up.
LEASE_US = 10 * 60_000_000
DISCOVERY_BATCH = 1000
CLAIM_BATCH = 16
# A claimed batch takes at least this long: feeds that fail at once (a host found
# dead a moment ago) are worked through at up to 160 a second, a few milliseconds of
# CPU a second, rather than as fast as the process can, which would take the event
# loop from the requests it serves. Fetches over the network take longer anyway.
BATCH_MIN_S = 0.1
# A person's `Refresh` fetches a feed at most this often (whoever presses it).
REFRESH_GAP_US = 60_000_000
EPISODES_PER_WRITE = 500
# The defaults of feeds.artwork_max_kib and feeds.artwork_store_mib.
ARTWORK_MAX_BYTES = 1 << 20
ARTWORK_STORE_BYTES = 1 << 30


def _parse_feed(body: bytes, url: str, content_type: str) -> store.LearnedFeed:
    """`parse.parse_feed`, loaded with the first feed to read (on the parser thread)."""
    from podsync.services.feeds.parse import parse_feed

    return parse_feed(body, url, content_type)


def next_try_after_failure(now: int, failures: int, refresh_us: int) -> int:
    """The refresh window, doubled per failure in a row after the first, up to a week
    (or the window, when that is longer)."""
    delay: int = refresh_us * 2 ** min(failures - 1, 16)
    return now + min(delay, max(refresh_us, MAX_BACKOFF_US))


@dataclass(frozen=True, slots=True)
class Outcome:
    """One claimed feed's fetch, to be recorded: `fetched` (and what was `learned`
    from a 200) when it succeeded, else the `error`. `at`: when it ended."""

    feed: store.DueFeed
    at: int
    fetched: Fetched | None = None
    learned: store.LearnedFeed | None = None
    error: str = ""
    artwork: Found | None = None  # what a look at its image found
    asking: int | None = None  # the user who asked for this fetch (a Refresh)


class FeedFetcher:
    def __init__(
        self,
        db: Engine,
        client: FeedClient,
        refresh_hours: int,
        *,
        concurrency: int = 4,
        poll_interval_s: float = 60.0,
        batch_min_s: float = BATCH_MIN_S,
        clock: Callable[[], int] = timestamps.now_us,
        artwork_max_bytes: int = ARTWORK_MAX_BYTES,
        artwork_store_bytes: int = ARTWORK_STORE_BYTES,
        artwork_share_bytes: int | None = None,
    ) -> None:
        self.db = db
        self.refresh_us = refresh_hours * HOUR_US
        self.client = client
        self.concurrency = concurrency
        self.poll_interval_s = poll_interval_s
        self.batch_min_s = batch_min_s
        self.clock = clock
        # One parse at a time for the passes, off the event loop: a large feed costs
        # the loop nothing but the GIL's switch interval. A parse ends within its
        # deadline (parse.parse_feed); a person's Subscribe or Refresh is parsed on
        # threads of its own, so a pass busy with a hostile feed never holds it back.
        self._parser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="podsync-feed-parse")
        self._asked = ThreadPoolExecutor(max_workers=2, thread_name_prefix="podsync-feed-asked")
        self.failure_log = FailureLog(log)
        self.artwork = ArtworkKeeper(
            client, artwork_max_bytes, artwork_store_bytes, clock, artwork_share_bytes
        )
        self.claimer = claims.claimer()

    async def open(self) -> None:
        await self.client.open()

    async def close(self) -> None:
        await self.client.close()
        # A parse under way finishes on its thread (it touches no database); the
        # server's shutdown does not wait for it here.
        self._parser.shutdown(wait=False, cancel_futures=True)
        self._asked.shutdown(wait=False, cancel_futures=True)

    async def run_forever(self) -> None:
        """Passes until cancelled, the first at once after `take_back`; a pass that
        fails is logged and the next one runs."""
        try:
            await self.take_back()
        except Exception:
            log.exception("the feed fetcher could not take back its claims; they run out")
        while True:
            try:
                await self.run_once()
            except Exception:
                log.exception("the feed fetcher's pass failed; trying again later")
            await asyncio.sleep(self.poll_interval_s)

    async def take_back(self) -> None:
        """At the start of the fetcher's passes, make due at once the feeds that
        wait for nothing: those claimed by a process of this machine that is gone (it
        died mid-fetch), and, when private addresses are allowed, those refused for
        not being public (the setting was just turned on: their backoff was for a
        refusal that no longer holds)."""
        now = self.clock()
        async with self.db.write() as conn:
            gone = [c for c in await feed_claims.claimers(conn, now) if claims.is_gone(c)]
            released = await feed_claims.release_claims(conn, gone, now)
            retried = 0
            if self.client.allow_private:
                retried = await feed_claims.retry_refused(conn, refusals.PREFIX, now)
        if released:
            pids = ", ".join(sorted({c.split(" ")[1] for c in gone}))
            log.info(
                "took back %d feeds claimed for fetching by a process that is gone (pid %s); "
                "fetching them now",
                released,
                pids,
            )
        if retried:
            log.info(
                "%s is on: fetching now %d feeds refused before as not public",
                refusals.SETTING,
                retried,
            )

    async def let_go(self) -> None:
        """Give back this process's claims of fetches that did not end (a stop or a
        reload cancelled them): due at once again, for the next pass of whichever
        process fetches."""
        now = self.clock()
        async with self.db.write() as conn:
            await feed_claims.release_claims(conn, [self.claimer], now)

    async def run_once(self) -> int:
        """One pass: discover, then claim and fetch until nothing is due. Returns how
        many feeds were fetched (successfully or not)."""
        while True:
            async with self.db.write() as conn:
                seen = await store.discover(conn, self.clock(), DISCOVERY_BATCH)
            if seen < DISCOVERY_BATCH:
                break
        done = 0
        gate = asyncio.Semaphore(self.concurrency)
        faults = HostFaults()
        ended: Sequence[Outcome] = ()
        try:
            while True:
                now = self.clock()
                # The last batch's outcomes and the next batch's claim: one write.
                async with self.db.write() as conn:
                    await self._record(conn, ended)
                    due = await store.claim_due(
                        conn, now, now + LEASE_US, CLAIM_BATCH, self.claimer
                    )
                self._log(ended)
                if not due:
                    return done
                began = asyncio.get_running_loop().time()
                outcomes = await asyncio.gather(
                    *(self._gated(gate, feed, faults) for feed in due), return_exceptions=True
                )
                done += len(due)
                # A feed's own faults are in its outcome; what is left is the database
                # failing (locked, full): stop the pass, and the unrecorded feeds come
                # back when their claim runs out.
                for outcome in outcomes:
                    if isinstance(outcome, BaseException):
                        raise outcome
                ended = [o for o in outcomes if not isinstance(o, BaseException)]
                rest = began + self.batch_min_s - asyncio.get_running_loop().time()
                if rest > 0:
                    await asyncio.sleep(rest)
        finally:
            self.failure_log.flush()

    async def _gated(
        self, gate: asyncio.Semaphore, feed: store.DueFeed, faults: HostFaults
    ) -> Outcome:
        async with gate:
            return await self._attempt(feed, faults, self._parser)

    async def fetch_one(self, feed: store.DueFeed, asking: int | None = None) -> None:
        """Fetch, parse and record one claimed feed (a person asked for it: the user
        `asking`, when known); never raises for the feed's faults (they are
        recorded)."""
        outcome = replace(await self._attempt(feed, None, self._asked), asking=asking)
        async with self.db.write() as conn:
            await self._record(conn, [outcome])
        self._log([outcome])

    async def _attempt(
        self, feed: store.DueFeed, faults: HostFaults | None, parser: ThreadPoolExecutor
    ) -> Outcome:
        """Fetch and parse (on `parser`) one claimed feed and store its changed
        episodes; the feed's row is left for `_record`. Never raises for the feed's
        faults."""
        try:
            fetched = await self.client.fetch(feed.feed_url, feed.etag, feed.last_modified, faults)
            learned = None
            if not fetched.not_modified:
                loop = asyncio.get_running_loop()
                learned = await loop.run_in_executor(
                    parser, _parse_feed, fetched.body, fetched.url, fetched.content_type
                )
        except (FetchError, NotAFeed) as exc:
            return Outcome(feed, self.clock(), error=str(exc))
        except Exception as exc:  # a parser bug must not stop the other feeds
            log.exception("reading the feed %s failed", shown(feed.url_key))
            error = f"the feed could not be read ({type(exc).__name__})"
            return Outcome(feed, self.clock(), error=error)
        found = None
        if learned is not None:
            await self._store_episodes(feed.url_key, learned, parser)
            found = await self._look_at_artwork(feed, learned.artwork_url, faults)
        return Outcome(feed, self.clock(), fetched, learned, artwork=found)

    async def _look_at_artwork(
        self, feed: store.DueFeed, url: str | None, faults: HostFaults | None
    ) -> Found | None:
        """The image of a feed read anew (services/feeds/artwork.py); a bug there
        never fails the feed."""
        try:
            return await self.artwork.look(feed, url, faults)
        except Exception:
            log.exception("fetching the artwork of the feed %s failed", shown(feed.url_key))
            return None

    async def _record(self, conn: Connection, outcomes: Sequence[Outcome]) -> None:
        """Record fetches that ended (in a write): a success as what it learned, the
        failures together (one statement), each with its own backoff."""
        failed = []
        for o in outcomes:
            if o.fetched is None:
                later = next_try_after_failure(o.at, o.feed.failures + 1, self.refresh_us)
                failed.append((o.feed.url_key, o.error, o.at, later))
            else:
                await store.record_fetched(
                    conn,
                    o.feed.url_key,
                    o.learned,
                    o.fetched.etag,
                    o.fetched.last_modified,
                    o.at,
                    o.at + self.refresh_us,
                )
                if o.artwork is not None:
                    await self.artwork.record(conn, o.feed.url_key, o.artwork, o.asking)
        await store.record_failures(conn, failed)

    def _log(self, outcomes: Sequence[Outcome]) -> None:
        for o in outcomes:
            if o.fetched is None:
                self.failure_log.failed(o.feed.url_key, o.feed.failures + 1, o.error)

    async def parse(self, fetched: Fetched) -> store.LearnedFeed:
        """What a fetched feed holds, read on a thread for what people ask; NotAFeed
        when it is something else."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._asked, _parse_feed, fetched.body, fetched.url, fetched.content_type
        )

    async def keep_checked(
        self, feed_url: str, url_key: str, learned: store.LearnedFeed, asking: int | None = None
    ) -> None:
        """Store what a check learned of a feed the user `asking` is about to
        subscribe to, so that its title shows on the next page load; the next regular
        fetch is a refresh window away."""
        now = self.clock()
        async with self.db.write() as conn:
            await store.add_feed(conn, url_key, feed_url, now, checked=True)
        await self._store_episodes(url_key, learned, self._asked)
        async with self.db.write() as conn:
            await store.record_fetched(
                conn, url_key, learned, None, None, now, now + self.refresh_us
            )
        async with self.db.read() as conn:
            due = await store.due_state(conn, url_key)
        # Its artwork too, so that it shows on the next page.
        found = None if due is None else await self._look_at_artwork(due, learned.artwork_url, None)
        if found is not None:
            async with self.db.write() as conn:
                await self.artwork.record(conn, url_key, found, asking)

    async def keep_failed(self, feed_url: str, url_key: str, error: str) -> None:
        """Record that a check could not fetch a feed about to be subscribed to (no
        answer, a timeout, a 5xx), as any failed fetch: its page says why at once, and
        the next try is a backoff away."""
        now = self.clock()
        async with self.db.write() as conn:
            await store.add_feed(conn, url_key, feed_url, now)
            known = await store.infos(conn, [url_key])
            later = next_try_after_failure(now, known[url_key].failures + 1, self.refresh_us)
            await store.record_failures(conn, [(url_key, error, now, later)])

    async def claim_refresh(
        self, conn: Connection, url_key: str, feed_url: str, now: int
    ) -> store.DueFeed | None:
        """Claim one feed for a fetch now (a person's `Refresh`, which then calls
        `fetch_one`); None when it was fetched or tried less than REFRESH_GAP_US ago,
        or another fetch of it is under way. Call in a write."""
        await store.add_feed(conn, url_key, feed_url, now)
        return await store.claim_now(
            conn, url_key, now, now - REFRESH_GAP_US, now + LEASE_US, self.claimer
        )

    async def refresh(self, url_key: str, feed_url: str) -> bool:
        """Fetch one feed now, bound by REFRESH_GAP_US alone (a person's Refresh goes
        through `FeedChecks.refresh`, which bounds the person's fetches too); False
        when it was not fetched."""
        async with self.db.write() as conn:
            due = await self.claim_refresh(conn, url_key, feed_url, self.clock())
        if due is None:
            return False
        await self.fetch_one(due)
        return True

    async def _store_episodes(
        self, url_key: str, learned: store.LearnedFeed, worker: ThreadPoolExecutor
    ) -> None:
        """Write only what changed since the last fetch (usually an episode or two: a
        kept item keeps its rank, `order.plan`), a few hundred rows per write, so
        that no write holds the lock for long; the stored rows are read, and the
        changes worked out, off the event loop."""
        async with self.db.read(threaded=True) as conn:
            stored = await store.stored_episodes(conn, url_key)
        loop = asyncio.get_running_loop()
        changes = await loop.run_in_executor(worker, order.plan, learned.episodes, stored)
        removed, added = changes
        for start in range(0, max(len(removed), len(added)), EPISODES_PER_WRITE):
            async with self.db.write() as conn:
                await store.change_episodes(
                    conn,
                    url_key,
                    removed[start : start + EPISODES_PER_WRITE],
                    added[start : start + EPISODES_PER_WRITE],
                )
