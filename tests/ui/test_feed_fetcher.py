"""The opt-in feed fetcher against feeds served on 127.0.0.1: what it learns, its
conditional GETs, its limits (time, size, redirects), its refusals of private
addresses, how failures are recorded and retried, and that sync never notices.

Subscriptions go through the real API; the fetcher runs on its own connection to
the same database, as the server's background task does, one pass at a time."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.config import Config
from podsync.feeds import url_key
from podsync.services.feed_info import EpisodeRef, FeedInfo, FeedInfoService
from podsync.services.feeds.addresses import IPAddress
from podsync.services.feeds.fetcher import BATCH_MIN_S, HOUR_US, FeedFetcher
from podsync.services.feeds.http import FeedClient, Limits
from podsync.services.feeds.refusals import refused
from podsync.storage.engine import Engine, create_engine
from podsync.store import podcast_page
from podsync.web.app import create_app
from tests.conftest import login
from tests.support.feed_site import FeedSite, rss
from tests.support.server_support import free_port
from tests.support.sync_helpers import action, get_json, post_batch

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]
WINDOW = 24 * HOUR_US


class Clock:
    def __init__(self) -> None:
        self.now = timestamps.now_us()

    def __call__(self) -> int:
        return self.now


@pytest.fixture
async def client(aiohttp_client: Any, config: Config, seeded_users: tuple[str, ...]) -> Client:
    """The app on a database that holds alice, bob and carol (hashed once a session)."""
    result: Client = await aiohttp_client(create_app(config))
    return result


@pytest.fixture
async def alice(client: Client) -> str:
    token: str = (await login(client, "alice"))["access_token"]
    return token


@pytest.fixture
async def site() -> AsyncIterator[FeedSite]:
    server = FeedSite()
    await server.start()
    yield server
    await server.close()


@pytest.fixture
async def db(config: Config, client: Client) -> AsyncIterator[Engine]:
    """A second connection to the app's database: the fetcher's (after the app
    created the schema)."""
    engine = create_engine(config.database)
    await engine.open()
    yield engine
    await engine.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def fetchers(db: Engine, clock: Clock) -> AsyncIterator[Callable[..., FeedFetcher]]:
    made: list[FeedFetcher] = []

    async def _close() -> None:
        for fetcher in made:
            await fetcher.close()

    def make(
        allow_private: bool = True, on: Engine | None = None, **client_options: Any
    ) -> FeedFetcher:
        client = FeedClient(allow_private, **client_options)
        fetcher = FeedFetcher(on or db, client, refresh_hours=24, clock=clock)
        made.append(fetcher)
        return fetcher

    yield make
    await _close()


async def fetch_pass(fetcher: FeedFetcher) -> int:
    await fetcher.open()
    return await fetcher.run_once()


async def subscribe(client: Client, token: str, *urls: str) -> list[str]:
    body = await post_batch(client, token, [action(feed_url=url) for url in urls])
    return [r["data"]["sync_id"] for r in body["results"]]


async def info(db: Engine, url: str) -> FeedInfo:
    found = await FeedInfoService(db, True).for_feeds([url])
    return found[url]


async def test_title_website_artwork_and_episode_titles_are_learned(
    client: Client, alice: str, site: FeedSite, db: Engine, fetchers: Callable[..., FeedFetcher]
) -> None:
    show, atom = site.url("/show.xml"), site.url("/atom.xml")
    await subscribe(client, alice, show, atom)
    assert await fetch_pass(fetchers()) == 2

    learned = await info(db, show)
    assert (learned.title, learned.link, learned.artwork_url) == (
        "The Show",
        "https://show.example/",
        "https://cdn.show.example/art.jpg",
    )
    assert learned.last_error is None and learned.fetched_at is not None
    other = await info(db, atom)
    assert (other.title, other.link, other.artwork_url) == (
        "An Atom Show",
        "https://atom.example/",
        "https://atom.example/logo.png",
    )
    # Another spelling of the same feed finds the same row.
    assert (await info(db, show.replace("http://", "HTTP://") + "/#top")).title == "The Show"

    service = FeedInfoService(db, True)
    by_url = EpisodeRef(show, "https://cdn.show.example/7.mp3")
    by_guid = EpisodeRef(show, "https://tracker.example/redirect/7.mp3", "show-8")
    elsewhere = EpisodeRef(atom, "https://cdn.show.example/7.mp3")  # not in that feed
    atom_episode = EpisodeRef(atom, "https://atom.example/1.ogg")
    titles = await service.episode_titles([by_url, by_guid, elsewhere, atom_episode])
    assert titles == {
        by_url: "Episode 7: a conversation about things",
        by_guid: "Episode 8: a conversation about things",
        atom_episode: "First entry",
    }
    assert (await service.summary()).fetched == 2
    agent = site.headers_seen[0]["User-Agent"]
    assert agent.startswith("podsync/") and "podsync" in agent


async def test_a_feed_shared_by_two_users_is_fetched_once(
    client: Client,
    alice: str,
    site: FeedSite,
    fetchers: Callable[..., FeedFetcher],
) -> None:
    bob = (await login(client, "bob"))["access_token"]
    await subscribe(client, alice, site.url("/show.xml"))
    await subscribe(client, bob, site.url("/show.xml/"))  # bob's spelling differs
    assert await fetch_pass(fetchers()) == 1
    assert site.hits["/show.xml"] == 1


async def test_two_processes_fetch_each_feed_once(
    client: Client,
    alice: str,
    config: Config,
    site: FeedSite,
    fetchers: Callable[..., FeedFetcher],
) -> None:
    urls = [site.url("/show.xml"), site.url("/atom.xml"), *(site.url(f"/hop/{n}") for n in (1, 2))]
    await subscribe(client, alice, *urls)
    other = create_engine(config.database)
    await other.open()
    try:
        first, second = fetchers(), fetchers(on=other)
        await first.open()
        await second.open()
        counts = await asyncio.gather(first.run_once(), second.run_once())
    finally:
        await other.close()
    assert sum(counts) == 4
    assert site.hits["/show.xml"] == 3  # directly, and at the end of each /hop/N
    assert site.hits["/atom.xml"] == 1


async def test_within_the_window_nothing_is_fetched_after_it_a_304_keeps_what_was_learned(
    client: Client,
    alice: str,
    site: FeedSite,
    db: Engine,
    clock: Clock,
    fetchers: Callable[..., FeedFetcher],
) -> None:
    show = site.url("/show.xml")
    await subscribe(client, alice, show)
    fetcher = fetchers()
    await fetch_pass(fetcher)
    first = await info(db, show)

    clock.now += WINDOW - 1
    assert await fetcher.run_once() == 0
    assert site.hits["/show.xml"] == 1

    clock.now += 1
    assert await fetcher.run_once() == 1
    conditional = site.headers_seen[-1]
    assert conditional["If-None-Match"] == '"v1"'
    assert conditional["If-Modified-Since"] == site.last_modified
    kept = await info(db, show)
    assert kept.title == "The Show" and kept.artwork_url == first.artwork_url
    assert kept.fetched_at == clock.now and kept.next_try_at == clock.now + WINDOW
    titles = await FeedInfoService(db, True).episode_titles(
        [EpisodeRef(show, "https://cdn.show.example/100.mp3")]
    )
    assert list(titles.values()) == ["Episode 100: a conversation about things"]


async def test_a_changed_feed_replaces_title_and_episodes(
    client: Client,
    alice: str,
    site: FeedSite,
    db: Engine,
    clock: Clock,
    fetchers: Callable[..., FeedFetcher],
) -> None:
    show = site.url("/show.xml")
    await subscribe(client, alice, show)
    fetcher = fetchers()
    await fetch_pass(fetcher)
    site.feed, site.etag = rss("The Show, renamed", episodes=3, prefix="Part", artwork=None), '"v2"'
    clock.now += WINDOW
    await fetcher.run_once()

    learned = await info(db, show)
    assert (learned.title, learned.artwork_url) == ("The Show, renamed", None)
    refs = [EpisodeRef(show, f"https://cdn.show.example/{n}.mp3") for n in (2, 50)]
    titles = await FeedInfoService(db, True).episode_titles(refs)
    assert titles == {refs[0]: "Part 2: a conversation about things"}


async def test_a_feed_that_does_not_answer_in_time_is_recorded(
    client: Client,
    alice: str,
    site: FeedSite,
    db: Engine,
    clock: Clock,
    fetchers: Callable[..., FeedFetcher],
) -> None:
    slow = site.url("/slow.xml")
    await subscribe(client, alice, slow)
    started = time.monotonic()
    await fetch_pass(fetchers(limits=Limits(timeout_s=0.5)))
    assert time.monotonic() - started < 4
    failed = await info(db, slow)
    assert failed.last_error == "no complete answer within 0.5 s"
    assert failed.failures == 1 and failed.title is None
    assert failed.checked_at == clock.now and failed.next_try_at == clock.now + WINDOW
    assert [f.url_key for f in await FeedInfoService(db, True).failing()] == [failed.url_key]


@pytest.mark.parametrize("path", ["/huge.xml", "/huge-declared.xml", "/gzip-bomb.xml"])
async def test_a_feed_over_5_mib_is_refused(
    client: Client,
    alice: str,
    site: FeedSite,
    db: Engine,
    fetchers: Callable[..., FeedFetcher],
    path: str,
) -> None:
    await subscribe(client, alice, site.url(path))
    await fetch_pass(fetchers())
    assert (await info(db, site.url(path))).last_error == "the feed is larger than 5 MiB"


def only_127_0_0_1_is_public(address: IPAddress) -> bool:
    """Stands in for "public": the test host is 127.0.0.1, everything else counts
    as what it is (127.0.0.2 is loopback, so private)."""
    return str(address) == "127.0.0.1"


class StubResolver(AbstractResolver):
    """`private.test` -> 127.0.0.2, anything else -> 127.0.0.1 (never the network)."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = "127.0.0.2" if host == "private.test" else "127.0.0.1"
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("target", "error"),
    [
        ("127.0.0.2", refused("127.0.0.2 is not a public address")),
        ("private.test", refused("private.test resolves to no public address (127.0.0.2)")),
    ],
)
async def test_a_redirect_to_a_private_address_is_refused_and_recorded(
    client: Client,
    alice: str,
    site: FeedSite,
    db: Engine,
    fetchers: Callable[..., FeedFetcher],
    target: str,
    error: str,
) -> None:
    start = site.url(f"/to/{target}")
    await subscribe(client, alice, start)
    fetcher = fetchers(
        allow_private=False, is_allowed=only_127_0_0_1_is_public, resolver=StubResolver()
    )
    await fetch_pass(fetcher)
    refused = await info(db, start)
    assert refused.last_error == error and refused.failures == 1
    assert site.hits[f"/to/{target}"] == 1
    assert site.hits["/show.xml"] == 0  # the private address was never asked


async def test_loopback_feeds_are_refused_before_any_connection(
    client: Client, alice: str, site: FeedSite, db: Engine, fetchers: Callable[..., FeedFetcher]
) -> None:
    by_address, by_name = site.url("/show.xml"), site.url("/atom.xml", host="localhost")
    await subscribe(client, alice, by_address, by_name)
    await fetch_pass(fetchers(allow_private=False))  # the real policy and resolver
    assert (await info(db, by_address)).last_error == refused("127.0.0.1 is not a public address")
    assert (await info(db, by_name)).last_error.startswith(  # type: ignore[union-attr]
        "refused: localhost resolves to no public address"
    )
    assert sum(site.hits.values()) == 0


async def test_redirects_up_to_five_are_followed_then_refused_and_loops_named(
    client: Client, alice: str, site: FeedSite, db: Engine, fetchers: Callable[..., FeedFetcher]
) -> None:
    five, six, loop = site.url("/hop/5"), site.url("/hop/6"), site.url("/loop-a")
    await subscribe(client, alice, five, six, loop)
    await fetch_pass(fetchers())
    assert (await info(db, five)).title == "The Show"
    assert (await info(db, six)).last_error == "more than 5 redirects"
    assert (await info(db, loop)).last_error == "the redirects go round in a loop"
    assert site.hits["/loop-a"] == 1 and site.hits["/loop-b"] == 1


async def test_a_page_that_is_not_a_feed_and_a_404_are_recorded(
    client: Client, alice: str, site: FeedSite, db: Engine, fetchers: Callable[..., FeedFetcher]
) -> None:
    page, missing = site.url("/page.html"), site.url("/missing.xml")
    await subscribe(client, alice, page, missing)
    await fetch_pass(fetchers())
    assert (await info(db, page)).last_error == "the answer is not an RSS or Atom feed"
    assert (await info(db, page)).title is None
    assert (await info(db, missing)).last_error == "HTTP 404"


async def test_failures_back_off_and_a_success_clears_them(
    client: Client,
    alice: str,
    site: FeedSite,
    db: Engine,
    clock: Clock,
    fetchers: Callable[..., FeedFetcher],
) -> None:
    feed = site.url("/missing.xml")
    await subscribe(client, alice, feed)
    fetcher = fetchers()
    await fetch_pass(fetcher)
    clock.now += WINDOW
    await fetcher.run_once()
    twice = await info(db, feed)
    assert twice.failures == 2 and twice.next_try_at == clock.now + 2 * WINDOW
    clock.now += WINDOW  # not due yet
    assert await fetcher.run_once() == 0

    site.missing_is_back = True
    clock.now += WINDOW
    assert await fetcher.run_once() == 1
    fixed = await info(db, feed)
    assert (fixed.failures, fixed.last_error, fixed.title) == (0, None, "The Show")
    assert fixed.next_try_at == clock.now + WINDOW
    assert await FeedInfoService(db, True).failing() == []


async def test_unsubscribed_feeds_are_not_fetched(
    client: Client, alice: str, site: FeedSite, fetchers: Callable[..., FeedFetcher]
) -> None:
    (sync_id,) = await subscribe(client, alice, site.url("/show.xml"))
    await post_batch(
        client, alice, [action("unsubscribe", occurred_at="2026-02-01T00:00:00Z", sync_id=sync_id)]
    )
    assert await fetch_pass(fetchers()) == 0
    assert sum(site.hits.values()) == 0


async def test_fetching_never_changes_what_apps_sync(
    client: Client, alice: str, site: FeedSite, clock: Clock, fetchers: Callable[..., FeedFetcher]
) -> None:
    await subscribe(client, alice, site.url("/show.xml"), site.url("/page.html"))
    listed = await get_json(client, alice, "/api/v1/subscriptions?include_unsubscribed=true")
    changes = await get_json(client, alice, "/api/v1/sync")
    fetcher = fetchers()
    await fetch_pass(fetcher)
    site.feed, site.etag = rss("Renamed"), '"v2"'
    clock.now += WINDOW
    await fetcher.run_once()
    assert await get_json(client, alice, "/api/v1/subscriptions?include_unsubscribed=true") == (
        listed
    )
    assert await get_json(client, alice, "/api/v1/sync") == changes
    quiet = await get_json(client, alice, changes["next_since"])
    assert quiet["results"] == []


async def stored_order(db: Engine, url: str) -> list[tuple[str, int | None, int | None]]:
    async with db.read() as conn:
        rows = await conn.fetch_all(
            "SELECT guid, published_at, feed_rank FROM feed_episodes WHERE url_key = ? "
            "ORDER BY feed_rank DESC",
            (url_key(url),),
        )
    return [(str(g), p, r) for g, p, r in rows]


async def test_episodes_keep_their_dates_and_place_and_a_new_one_writes_one_row(
    client: Client,
    alice: str,
    site: FeedSite,
    db: Engine,
    clock: Clock,
    fetchers: Callable[..., FeedFetcher],
) -> None:
    show = site.url("/show.xml")
    site.feed = rss(episodes=5)
    await subscribe(client, alice, show)
    fetcher = fetchers()
    await fetch_pass(fetcher)
    first = await stored_order(db, show)
    assert [g for g, _, _ in first] == [f"show-{n}" for n in (5, 4, 3, 2, 1)]
    assert first[0][1] == (1_700_000_000 + 5 * 86400) * 1_000_000
    # A new episode on top, the oldest gone: the others keep their rows as they were.
    site.feed, site.etag = rss(episodes=5, first=2), '"v2"'
    clock.now += WINDOW
    await fetcher.run_once()
    second = await stored_order(db, show)
    assert [g for g, _, _ in second] == [f"show-{n}" for n in (6, 5, 4, 3, 2)]
    assert second[1:] == first[:4]
    async with db.read() as conn:
        newest = await podcast_page.newest_episodes(conn, url_key(show), 1, 2)
    assert [e.guid for e in newest] == ["show-5", "show-4"]
    # A feed without dates is listed in its own order.
    site.feed, site.etag = rss(episodes=3, first=7, dated=False), '"v3"'
    clock.now += WINDOW
    await fetcher.run_once()
    async with db.read() as conn:
        undated = await podcast_page.newest_episodes(conn, url_key(show), 0, 10)
    assert [(e.guid, e.published_at) for e in undated] == [
        ("show-9", None), ("show-8", None), ("show-7", None)
    ]  # fmt: skip


class CountingResolver(AbstractResolver):
    """Counts lookups: a name in `gone` does not resolve (as the system resolver
    says it), anything else is 127.0.0.1."""

    def __init__(self, *gone: str) -> None:
        self.gone = set(gone)
        self.lookups: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.lookups.append(host)
        if host in self.gone:
            raise OSError(socket.EAI_NONAME, "Name or service not known")
        return await StubResolver().resolve(host, port, family)

    async def close(self) -> None:
        pass


async def test_many_feeds_on_a_host_that_does_not_resolve_cost_a_lookup_and_few_commits(
    client: Client,
    alice: str,
    site: FeedSite,
    db: Engine,
    clock: Clock,
    fetchers: Callable[..., FeedFetcher],
    caplog: pytest.LogCaptureFixture,
) -> None:
    gone = [f"https://gone.test/feeds/{n}.xml" for n in range(60)]
    fine, missing = site.url("/show.xml"), site.url("/missing.xml")
    for start in range(0, 60, 30):
        await subscribe(client, alice, *gone[start : start + 30])
    await subscribe(client, alice, fine, missing)
    resolver = CountingResolver("gone.test")
    fetcher = fetchers(resolver=resolver)
    before, began = db.commits, time.monotonic()
    with caplog.at_level(logging.INFO, logger="podsync.feeds"):
        assert await fetch_pass(fetcher) == 62
    # Feeds that fail at once go no faster than a batch per BATCH_MIN_S.
    assert time.monotonic() - began >= 62 // 16 * BATCH_MIN_S
    # One lookup of the dead name (a few at most: the first feeds go at once), and
    # one write per claimed batch of 16 (with the batch before's outcomes), not one
    # per feed.
    assert 1 <= resolver.lookups.count("gone.test") <= fetcher.concurrency
    # Discovery, 4 batches, the claim that finds none left, the one feed's episodes.
    assert db.commits - before <= 1 + 4 + 1 + 1
    for url in gone:
        failed = await info(db, url)
        assert (failed.last_error, failed.failures) == ("the host name does not resolve", 1)
        assert failed.checked_at == clock.now and failed.next_try_at == clock.now + WINDOW
    # A path's fault stays its own, and the host's other feeds are fetched.
    assert (await info(db, missing)).last_error == "HTTP 404"
    assert (await info(db, fine)).title == "The Show"
    # A few lines of their own, then one line sums up the rest by reason and host.
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(lines) <= 6
    assert any(
        "the host name does not resolve: " in line and "gone.test " in line for line in lines
    )

    # The next pass looks again (the name may have come back), and each feed backs
    # off by its own count.
    clock.now += WINDOW
    assert await fetcher.run_once() == 62
    assert resolver.lookups.count("gone.test") <= 2 * fetcher.concurrency
    for url in gone:
        twice = await info(db, url)
        assert twice.failures == 2 and twice.next_try_at == clock.now + 2 * WINDOW


async def test_a_refused_port_fails_its_feeds_alike_and_no_other_port(
    client: Client, alice: str, site: FeedSite, db: Engine, fetchers: Callable[..., FeedFetcher]
) -> None:
    closed = free_port()
    refusing = [f"http://refusing.test:{closed}/{n}.xml" for n in range(20)]
    open_port = site.url("/show.xml", host="refusing.test")  # the same name, a port that answers
    await subscribe(client, alice, *refusing, open_port)
    await fetch_pass(fetchers(resolver=CountingResolver()))
    reasons = {(await info(db, url)).last_error for url in refusing}
    assert len(reasons) == 1 and next(iter(reasons)).startswith("cannot connect: ")  # type: ignore[union-attr]
    assert [(await info(db, url)).failures for url in refusing] == [1] * len(refusing)
    assert (await info(db, open_port)).title == "The Show"
