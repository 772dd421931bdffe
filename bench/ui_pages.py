"""Server time per web UI page for one user with 1,000 subscriptions and 10,000
episode actions (the history), on SQLite; and of an artwork image (100 KiB) served
from the database, fetched anew and as a browser that keeps it asks (a 304).

The actions' own times are a permutation of their arrival order (as after devices
that sync backlogs), so the history's (time, seq) pages are not the arrival order.
The podcast whose page is measured has a feed of `--feed-episodes` items, stored
as the fetcher stores one (half the episodes acted on are in it, the rest are not);
every other subscription's feed has `--episodes-per-feed` items (titles made of
words from a list of 50, indexed for search as the fetcher's writes index them),
for the search page: a rare pair of words, a word in one title of 50, and one in
every title. An episode's page (one acted on, in the feed) and the statistics (over
the history's plays) are measured too, and the New episodes inbox and the Up next
queue (20 episodes queued).

Search's cost must follow the person's own podcasts: `--others-items` (200,000 by
default) feed items with show notes in the feeds of another user's 200
subscriptions, which the measured user does not have; search is measured over
titles and over notes for the measured user, and for a user with no
subscriptions at all (a "c" that starts a word of half the others' items).

The statistics of a third person with `--stats-plays` plays over the last year (20
podcasts, each episode played in ten stretches), written through the episode core's
write path (which keeps the running totals the page reads), are measured too.

    python bench/ui_pages.py [--subscriptions 1000] [--history 10000] [--requests 100]
        [--feed-episodes 300] [--episodes-per-feed 300] [--others-items 200000]
        [--stats-plays 200000]

Seeds through the real services (SyncService.apply for subscriptions, the episode
store for the history, the device store for three devices), serves the real app on
a loopback port with one extra outermost middleware that times each request inside
the server (wall clock, and the CPU time of the event loop's thread, where the SQLite
reads run too: the figure that a loaded machine inflates least), signs in through
/ui/login like a browser, and GETs every page `--requests` times. Prints the median
and 95th percentile per page, the median CPU time, and the page's size.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from podsync import timestamps
from podsync.config import Config, GpodderConfig, load_config
from podsync.feeds import url_key
from podsync.rules import Subscribe
from podsync.services.accounts import AccountService
from podsync.services.episodes import sessions
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.feeds.fetcher import FeedFetcher
from podsync.services.feeds.http import FeedClient
from podsync.services.passwords import PasswordService
from podsync.services.sync import SyncService
from podsync.storage.sqlite import Database
from podsync.store import (
    app_passwords,
    artwork,
    devices,
    episodes,
    feed_info,
    listening_totals,
    sync_health,
)
from podsync.store.episodes import EpisodeAction
from podsync.store.feed_info import FeedItem, LearnedFeed
from podsync.web.app import create_app

PASSWORD = "benchmark-password"
ACTIONS = ("play", "download", "play", "delete", "play")


PODCAST = "https://feeds3.example.org/podcast/rss"


def acted_on(subscriptions: int, history: int) -> list[int]:
    """The actions (one episode each) on the measured podcast."""
    return [i for i in range(history) if i % min(50, subscriptions) == 3]


def last_podcast_page(subscriptions: int, history: int, items: int) -> int:
    """The podcast page's last page: the feed's items, then the episodes acted on
    that it does not list."""
    acted = acted_on(subscriptions, history)
    listed = min(len(acted[::2]), items)
    return max(1, -(-(items + len(acted) - listed) // 100))


async def seed_feed(db: Database, subscriptions: int, history: int, items: int) -> None:
    """The measured podcast's feed, newest first, through the fetcher's own writes:
    its episodes acted on with an even number are in it, then items never acted on."""
    acted = acted_on(subscriptions, history)
    urls = [f"https://feeds3.example.org/podcast/episode-{i}.mp3" for i in acted[::2]]
    urls += [f"https://feeds3.example.org/podcast/extra-{n}.mp3" for n in range(items)]
    start = timestamps.now_us()
    episodes_of_feed = [
        FeedItem(url, f"guid-{n}", f"Episode {n} of the show", start - n * 86_400_000_000)
        for n, url in enumerate(urls[:items])
    ]
    learned = LearnedFeed("The Show", "https://feeds3.example.org/", None, episodes_of_feed)
    fetcher = FeedFetcher(db, FeedClient(False), refresh_hours=24)
    try:
        await fetcher.keep_checked(PODCAST, url_key(PODCAST), learned)
    finally:
        await fetcher.close()


IMAGES = 200  # distinct artwork images among the feeds (networks share theirs)
IMAGE_BYTES = 100 * 1024


def image(n: int) -> bytes:
    """A PNG-shaped body of IMAGE_BYTES (the store does not decode it)."""
    return b"\x89PNG\r\n\x1a\n" + hashlib.sha256(str(n).encode()).digest() * (IMAGE_BYTES // 32)


async def seed_artwork_and_health(db: Database, user_id: int, feeds: list[str]) -> str:
    """Artwork for every feed (IMAGES distinct ones, kept as the fetcher keeps them),
    the refusals a household sees (a device with an old password, a revoked app
    password still tried), and an app password; the hash of the measured podcast's
    image."""
    now = timestamps.now_us()
    async with db.write() as conn:
        for n, feed in enumerate(feeds):
            await feed_info.add_feed(conn, url_key(feed), feed, now + 10**12)
            body = image(n % IMAGES)
            kept = artwork.Kept(f"https://img{n % IMAGES}.example.org/a.png", None, None, now)
            digest = hashlib.sha256(body).hexdigest()
            await artwork.keep(
                conn, url_key(feed), digest, "image/png", body, kept, artwork.Room(1 << 40, 1 << 40)
            )
        for name in ("Kasts", "Old phone"):
            await app_passwords.add(
                conn, user_id, name, hashlib.sha256(name.encode()).digest(), now
            )
        refusals = [
            sync_health.Refusal(
                "device", "device-1", now, "192.0.2.7", "AntennaPod/3.7.0", "password"
            ),
            sync_health.Refusal("app_password", "2", now, "192.0.2.8", "Kasts/25.01", "revoked"),
        ]
        for refusal in refusals:
            await sync_health.refused(conn, user_id, refusal)
        await app_passwords.delete(conn, user_id, 2)
    return hashlib.sha256(image(3 % IMAGES)).hexdigest()


WORDS = [
    "harbour",
    "tide",
    "rope",
    "salt",
    "lantern",
    "anchor",
    "gull",
    "storm",
    "keel",
    "mast",
    "reef",
    "compass",
    "chart",
    "beacon",
    "drift",
    "ferry",
    "galley",
    "hull",
    "jetty",
    "knot",
    "ledger",
    "mooring",
    "net",
    "oar",
    "pier",
    "quay",
    "rudder",
    "sail",
    "tackle",
    "voyage",
    "wake",
    "yard",
    "buoy",
    "cabin",
    "deck",
    "estuary",
    "fathom",
    "gale",
    "helm",
    "inlet",
    "jib",
    "kelp",
    "lagoon",
    "marlin",
    "nautical",
    "orca",
    "pilot",
    "quarter",
    "rigging",
    "shoal",
]


def notes_of(i: int, n: int) -> str:
    """Show notes of a few sentences; one word of the list in each ("cove" plus a
    word of WORDS: a notes-only word is in one item of 50 or so)."""
    word = WORDS[(i * 3 + n * 11) % 50]
    return (
        f"<p>In this episode we talk with a guest about {word}cove and the sea.</p>"
        "<p>Links: <a href='https://example.org/'>our site</a>; chapters at 12:34.</p>"
    )


OTHERS_FEEDS = 200


async def seed_others(db: Database, config: Config, passwords: PasswordService, items: int) -> None:
    """Another user with OTHERS_FEEDS feeds of `items` items in all (notes too), and a
    user with no subscriptions ("lonely")."""
    accounts = AccountService(db, passwords)
    other = await accounts.add_user("others", PASSWORD)
    await accounts.add_user("lonely", PASSWORD)
    feeds = [f"https://others{i}.example.net/feed.xml" for i in range(OTHERS_FEEDS)]
    moment = timestamps.now_us() - 86_400_000_000
    await SyncService(db, config.sync).apply(
        other.id, None, [Subscribe(url, moment) for url in feeds]
    )
    per_feed = max(1, items // OTHERS_FEEDS)
    start = timestamps.now_us()
    for i, feed in enumerate(feeds):
        rows = [
            (f"https://others{i}.example.net/e{n}.mp3", f"o{i}-{n}",
             f"Conversation {n} about {WORDS[(i + n) % 50]}", start - n * 3_600_000_000,
             1800, None, "audio/mpeg", notes_of(i, n), None, per_feed - n)
            for n in range(per_feed)
        ]  # fmt: skip
        async with db.write() as conn:
            await feed_info.add_feed(conn, url_key(feed), feed, start + 10**12)
        for at in range(0, per_feed, 500):
            async with db.write() as conn:
                await feed_info.change_episodes(conn, url_key(feed), [], rows[at : at + 500])


async def seed_feeds(db: Database, feeds: list[str], per_feed: int) -> None:
    """`per_feed` items in the feed of each subscription but the measured podcast,
    written as the fetcher writes them (a few hundred rows a write), newest first."""
    start = timestamps.now_us()
    for i, feed in enumerate(feeds):
        if feed == PODCAST:
            continue
        rows = [
            (f"{feed.rsplit('/', 1)[0]}/item-{n}.mp3", f"g{i}-{n}",
             f"Episode {n} of show {i}: {WORDS[(i + n) % 50]} and {WORDS[(i * 7 + n) % 50]}",
             start - n * 86_400_000_000, 1800, None, "audio/mpeg", notes_of(i, n), None,
             per_feed - n)
            for n in range(per_feed)
        ]  # fmt: skip
        for at in range(0, per_feed, 300):
            async with db.write() as conn:
                await feed_info.change_episodes(conn, url_key(feed), [], rows[at : at + 300])


async def seed(
    config: Config, subscriptions: int, history: int, items: int, per_feed: int, others: int
) -> str:
    async with Database(config.database.path, config.database.durability) as db:
        passwords = PasswordService()
        try:
            user = await AccountService(db, passwords).add_user("bench", PASSWORD, admin=True)
            await seed_others(db, config, passwords, others)
        finally:
            passwords.close()
        sync = SyncService(db, config.sync)
        moment = timestamps.now_us() - 86_400_000_000
        feeds = [f"https://feeds{i}.example.org/podcast/rss" for i in range(subscriptions)]
        for start_at in range(0, subscriptions, 1000):
            chunk = feeds[start_at : start_at + 1000]
            await sync.apply(user.id, None, [Subscribe(url, moment) for url in chunk])
        now = timestamps.now_us()
        async with db.write() as conn:
            for n in range(3):
                await devices.upsert(conn, user.id, f"device-{n}", f"Device {n}", "mobile", now)
            actions = []
            for i in range(history):
                feed = feeds[i % min(50, subscriptions)]
                action = ACTIONS[i % len(ACTIONS)]
                play = action == "play"
                actions.append(
                    EpisodeAction(
                        seq=0,
                        podcast_url=feed,
                        podcast_key=url_key(feed),
                        episode_url=f"{feed.rsplit('/', 1)[0]}/episode-{i}.mp3",
                        action=action,
                        occurred_at=moment + ((i * 7919) % history) * 1_000_000,
                        device_id=f"device-{i % 3}",
                        guid=None,
                        started=0 if play else None,
                        position=(i * 7) % 3600 if play else None,
                        total=3600 if play else None,
                    )
                )
            batch = await episodes.resolve(conn, user.id, actions)
            await episodes.store(conn, batch, now)
            await listening_totals.count_plays(conn, user.id, sessions.plays_of(batch))
        await seed_feed(db, subscriptions, history, items)
        digest = await seed_artwork_and_health(db, user.id, feeds)
        await seed_feeds(db, feeds, per_feed)
        return digest


LISTENER = "listener"
YEAR_US = 365 * 86_400_000_000


async def seed_listener(config: Config, plays: int) -> None:
    """A person with `plays` plays over the last year, through EpisodeWrites.record
    (a thousand a write, as an app's upload)."""
    async with Database(config.database.path, config.database.durability) as db:
        passwords = PasswordService()
        try:
            user = await AccountService(db, passwords).add_user(LISTENER, PASSWORD)
        finally:
            passwords.close()
        writes = EpisodeWrites(db, UploadBounds(GpodderConfig(max_episode_actions_per_user=10**7)))
        start = timestamps.now_us() - YEAR_US
        for first in range(0, plays, 1000):
            batch = []
            for i in range(first, min(first + 1000, plays)):
                episode = i // 10
                feed = f"https://listen{episode % 20}.example.org/feed.xml"
                stretch = (i % 10) * 360
                batch.append(
                    EpisodeAction(
                        0, feed, url_key(feed), f"https://listen.example.org/{episode}.mp3",
                        "play", start + i * (YEAR_US // plays), f"device-{i % 3}", None,
                        stretch, stretch + 360, 3600,
                    )
                )  # fmt: skip
            await writes.record(user.id, batch, timestamps.now_us())


Timings = dict[str, list[tuple[float, float]]]  # (wall ms, CPU ms of the loop's thread)


def timing_middleware(timings: Timings) -> Callable[..., Awaitable[web.StreamResponse]]:
    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        began, cpu = time.perf_counter(), time.thread_time()
        response = await handler(request)
        wall = (time.perf_counter() - began) * 1000
        # The page as the bench names it (a query's spelling may change on the way).
        page = request.headers.get("X-Bench-Page", request.rel_url.path_qs)
        timings[page].append((wall, (time.thread_time() - cpu) * 1000))
        return response

    return middleware


async def run(
    subscriptions: int,
    history: int,
    requests: int,
    items: int,
    per_feed: int,
    others: int,
    stats_plays: int,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "podsync.toml"
        path.write_text(
            f'[server]\nhost = "127.0.0.1"\nport = 0\n[database]\npath = "{tmp}/podsync.db"\n'
            '[log]\nlevel = "warning"\naccess_log = false\n'
            "[feeds]\nfetch_metadata = false\n"  # its feeds are not served anywhere
        )
        config = load_config(path, environ={})
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        began = time.perf_counter()
        digest = await seed(config, subscriptions, history, items, per_feed, others)
        if stats_plays:
            await seed_listener(config, stats_plays)
        print(
            f"seeded {subscriptions} subscriptions, {history} episode actions, "
            f"a feed of {items} episodes, {per_feed} in each other feed, "
            f"{others} items of another user's {OTHERS_FEEDS} feeds, "
            f"{stats_plays} plays of a third person in {time.perf_counter() - began:.1f} s"
        )
        timings: Timings = defaultdict(list)
        app = create_app(config)
        app.middlewares.insert(0, timing_middleware(timings))
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        base = f"http://127.0.0.1:{port}"
        try:
            jar = aiohttp.CookieJar(unsafe=True)
            async with aiohttp.ClientSession(base, cookie_jar=jar) as session:
                async with session.post(
                    "/ui/login",
                    data={"username": "bench", "password": PASSWORD},
                    headers={"Origin": base},
                ) as response:
                    assert response.status == 200, await response.text()
                async with session.get("/ui/history") as response:
                    text = await response.text()
                    older = re.search(r"before=(\d+\.\d+)", text)
                    assert older is not None
                deep = older.group(1)
                for _ in range(100):  # 100 pages on: page 101 of the 10,000 rows' 200
                    async with session.get(f"/ui/history?before={deep}") as response:
                        found = re.search(r"before=(\d+\.\d+)", await response.text())
                    if found is None:
                        break
                    deep = found.group(1)
                async with session.get("/ui/subscriptions?q=feeds3.example.org") as response:
                    podcast = re.search(r'href="(/ui/podcasts/[^"]+)"', await response.text())
                    assert podcast is not None
                async with session.get(podcast.group(1)) as response:
                    episode = re.search(
                        r'<a class="episode" href="(/ui/episodes/[0-9]+)"', await response.text()
                    )
                    assert episode is not None
                key = url_key(PODCAST)
                pages = [
                    "/ui/",
                    "/ui/subscriptions",
                    "/ui/subscriptions?page=20",
                    "/ui/subscriptions?q=feeds77",
                    "/ui/subscriptions?all=1&q=example.org",
                    "/ui/history",
                    f"/ui/history?before={older.group(1)}",
                    f"/ui/history?before={deep}",
                    f"/ui/history?podcast={key}",
                    "/ui/history?device=device-1",
                    "/ui/history?action=play",
                    "/ui/history?action=delete",
                    podcast.group(1),
                    podcast.group(1) + f"?page={last_podcast_page(subscriptions, history, items)}",
                    "/ui/subscriptions?sort=played",
                    episode.group(1),
                    f"/ui/search?q={WORDS[7]}+{WORDS[11]}",  # a rare pair
                    f"/ui/search?q={WORDS[3]}",  # in one title of 50 or so
                    f"/ui/search?q={WORDS[3]}&page=20",
                    "/ui/search?q=episode",  # in every title
                    f"/ui/search?q={WORDS[5]}cove",  # in the notes of one item of 50
                    "/ui/search?q=guest",  # in every item's notes
                    "/ui/search?q=c",  # starts a word of every item
                    podcast.group(1).replace("/ui/podcasts/", "/ui/search?q=episode&podcast="),
                    "/ui/new",
                    "/ui/up-next",
                    "/ui/stats",
                    "/ui/devices",
                    "/ui/transfer",
                    "/ui/account",
                    "/ui/admin/users",
                    f"/ui/artwork/{digest}",
                ]
                sizes = {}
                timings.clear()
                for page in pages:
                    for _ in range(requests):
                        async with session.get(page, headers={"X-Bench-Page": page}) as response:
                            body = await response.read()
                            assert response.status == 200, (page, response.status)
                        sizes[page] = len(body)
                # The artwork again, as a browser that has it asks: If-None-Match.
                again = f"/ui/artwork/{digest}?again"
                for _ in range(requests):
                    headers = {"If-None-Match": f'"{digest}"', "X-Bench-Page": again}
                    async with session.get(again, headers=headers) as response:
                        assert response.status == 304, response.status
                pages.append(again)
                sizes[again] = 0
            # Search by a person with no subscriptions, beside everyone else's items.
            async with aiohttp.ClientSession(base, cookie_jar=aiohttp.CookieJar(unsafe=True)) as s:
                async with s.post(
                    "/ui/login",
                    data={"username": "lonely", "password": PASSWORD},
                    headers={"Origin": base},
                ) as response:
                    assert response.status == 200, await response.text()
                for page in ("/ui/search?q=c", "/ui/search?q=conversation", "/ui/search?q=guest"):
                    label = page + " (no subscriptions)"
                    for _ in range(requests):
                        async with s.get(page, headers={"X-Bench-Page": label}) as response:
                            body = await response.read()
                            assert response.status == 200, (page, response.status)
                    pages.append(label)
                    sizes[label] = len(body)
            if stats_plays:
                page = f"/ui/stats ({stats_plays} plays)"
                await time_listener_stats(base, page, requests, sizes)
                pages.append(page)
            print(f"{'page':56} {'wall ms':>8} {'p95':>7} {'CPU ms':>7} {'KiB':>6}")
            for page in pages:
                walls = sorted(w for w, _ in timings[page])
                cpus = [c for _, c in timings[page]]
                p95 = walls[int(len(walls) * 0.95) - 1]
                label = re.sub(r"/ui/podcasts/[^?]+", "/ui/podcasts/<id>", page)
                label = re.sub(r"/ui/episodes/[0-9]+", "/ui/episodes/<id>", label)
                label = re.sub(r"/ui/artwork/\w+", "/ui/artwork/<hash>", label)
                label = label.replace("?again", " (304)")
                print(
                    f"{label[:56]:56} {statistics.median(walls):8.2f} {p95:7.2f} "
                    f"{statistics.median(cpus):7.2f} {sizes[page] / 1024:6.1f}"
                )
            print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        finally:
            await runner.cleanup()


async def time_listener_stats(base: str, page: str, requests: int, sizes: dict[str, int]) -> None:
    """The statistics page of the person with many plays, signed in as them."""
    async with aiohttp.ClientSession(base, cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        async with session.post(
            "/ui/login",
            data={"username": LISTENER, "password": PASSWORD},
            headers={"Origin": base},
        ) as response:
            assert response.status == 200, await response.text()
        for _ in range(requests):
            async with session.get("/ui/stats", headers={"X-Bench-Page": page}) as response:
                body = await response.read()
                assert response.status == 200, response.status
            sizes[page] = len(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=1000)
    parser.add_argument("--history", type=int, default=10000)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--feed-episodes", type=int, default=300)
    parser.add_argument("--episodes-per-feed", type=int, default=300)
    parser.add_argument("--stats-plays", type=int, default=200_000)
    parser.add_argument("--others-items", type=int, default=200_000)
    args = parser.parse_args()
    asyncio.run(
        run(
            args.subscriptions,
            args.history,
            args.requests,
            args.feed_episodes,
            args.episodes_per_feed,
            args.others_items,
            args.stats_plays,
        )
    )


if __name__ == "__main__":
    main()
