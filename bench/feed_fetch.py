"""What the feed fetcher costs per feed: CPU milliseconds of the podsync process for a
typical podcast feed of 100 episodes (about 130 kB of RSS with show notes).

    python bench/feed_fetch.py [--feeds 200] [--episodes 100]

A second process serves the feeds on 127.0.0.1 (its CPU is not counted). One user
subscribes to `--feeds` distinct feed URLs on a temporary SQLite database; the real
FeedFetcher then runs three passes, each timed as CPU of this process (user +
system, every thread: event loop, parser thread, SQLite) and as wall time:

  first    every feed new: GET, parse, store title and 100 episode titles, and GET
           its artwork (one of 20 images of 60 KiB, each kept once)
  304      a window later, nothing changed: conditional GET answered 304 (no image)
  changed  a window later, each feed has one new episode: GET, parse, store the diff,
           and a conditional GET of its image, answered 304

and, apart, parse_feed alone on the same body (the part that runs in the parser
thread), and feedparser alone (the path of feeds that are not well-formed).

    python bench/feed_fetch.py --flood 5000 [--flood-host feeds.bench.invalid]

instead measures a flood: that many new feeds on one host that does not resolve (an
OPML import of a dead host's feeds, a server without DNS), one pass of the real
fetcher with the real resolver and address checks: wall and CPU time, commits, DNS
lookups and log lines, and that every feed's failure is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from podsync import timestamps
from podsync.config import load_config
from podsync.rules import Subscribe
from podsync.services.accounts import AccountService
from podsync.services.feeds.fetcher import BATCH_MIN_S, HOUR_US, FeedFetcher
from podsync.services.feeds.http import FeedClient
from podsync.services.feeds.parse import parse_feed, parse_forgiving
from podsync.services.passwords import PasswordService
from podsync.services.sync import SyncService
from podsync.storage.sqlite import Database
from tests.support.feed_site import rss

ARTWORKS = 20
ARTWORK_BYTES = 60 * 1024


def serve(episodes: int) -> None:
    """The feed host (run in its own process): /feed/N.xml, a new episode after
    GET /bump, ETag per version."""
    from aiohttp import web

    version = {"n": 0}
    images = {"asked": 0}

    def body(n: str) -> bytes:
        # The artwork on the same host, one of ARTWORKS images (shows of one network
        # share theirs): relative, as the feed's own base resolves it.
        return rss(f"Show {n}", episodes + version["n"], artwork=f"/art/{int(n) % ARTWORKS}.png")

    async def art(request: web.Request) -> web.Response:
        images["asked"] += 1
        k = request.match_info["k"]
        etag = f'"art-{k}"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        image = b"\x89PNG\r\n\x1a\n" + k.encode().rjust(32, b"0") * (ARTWORK_BYTES // 32)
        return web.Response(body=image, content_type="image/png", headers={"ETag": etag})

    async def asked(request: web.Request) -> web.Response:
        return web.Response(text=str(images["asked"]))

    async def feed(request: web.Request) -> web.Response:
        etag = f'"v{version["n"]}"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        return web.Response(
            body=body(request.match_info["n"]),
            content_type="application/rss+xml",
            headers={"ETag": etag},
        )

    async def bump(request: web.Request) -> web.Response:
        version["n"] += 1
        return web.Response(text="ok")

    async def main() -> None:
        app = web.Application()
        app.router.add_get("/feed/{n}.xml", feed)
        app.router.add_get("/bump", bump)
        app.router.add_get("/art/{k}.png", art)
        app.router.add_get("/asked", asked)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(runner.addresses[0][1], flush=True)  # the port, for the parent
        await asyncio.Event().wait()

    asyncio.run(main())


async def images_asked(base: str) -> int:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(f"{base}/asked") as answer:
        return int(await answer.text())


def cpu() -> float:
    times = os.times()
    return times.user + times.system


async def bench_user(db: Database) -> int:
    """The bench's one account, made through the account service."""
    passwords = PasswordService()
    try:
        user = await AccountService(db, passwords).add_user("bench", "benchmark-password")
    finally:
        passwords.close()
    return user.id


async def measure(feeds: int, episodes: int, tmp: Path, base: str) -> None:
    config_path = tmp / "podsync.toml"
    config_path.write_text(f'[database]\npath = "{tmp / "bench.db"}"\n')
    config = load_config(config_path, environ={})
    sample = rss("Show 0", episodes)
    print(f"feed: {episodes} episodes, {len(sample) / 1024:.0f} KiB; {feeds} feeds")
    for name, parse, rounds in (("parse_feed", parse_feed, 50), ("feedparser", parse_forgiving, 5)):
        began = cpu()
        for _ in range(rounds):
            parsed = parse(sample, base)
        assert len(parsed.episodes) == episodes
        print(f"{name + ' alone':27} {(cpu() - began) / rounds * 1000:7.2f} ms CPU per feed")

    async with Database(config.database.path, config.database.durability) as db:
        user_id = await bench_user(db)
        moment = timestamps.now_us() - HOUR_US
        await SyncService(db, config.sync).apply(
            user_id, None, [Subscribe(f"{base}/feed/{n}.xml", moment) for n in range(feeds)]
        )
        now = [timestamps.now_us()]
        fetcher = FeedFetcher(db, FeedClient(allow_private=True), 24, clock=lambda: now[0])
        await fetcher.open()
        try:
            for name in ("first", "304", "changed"):
                if name == "changed":
                    import aiohttp

                    async with aiohttp.ClientSession() as session:
                        await (await session.get(f"{base}/bump")).read()
                before = await images_asked(base)
                wall, used = time.perf_counter(), cpu()
                done = await fetcher.run_once()
                wall, used = time.perf_counter() - wall, cpu() - used
                assert done == feeds, (name, done)
                print(
                    f"pass {name:8}               {used / feeds * 1000:7.2f} ms CPU per feed"
                    f"  ({wall / feeds * 1000:6.2f} ms wall per feed, 4 at a time), "
                    f"{await images_asked(base) - before} artwork requests"
                )
                now[0] += 24 * HOUR_US
            async with db.read() as conn:
                row = await conn.fetch_one("SELECT count(*), count(last_error) FROM feed_info")
                episodes_stored = await conn.fetch_one("SELECT count(*) FROM feed_episodes")
                kept = await conn.fetch_one("SELECT count(*), coalesce(sum(size), 0) FROM artwork")
            assert row is not None and episodes_stored is not None and kept is not None
            print(
                f"stored: {row[0]} feeds, {row[1]} failing, {episodes_stored[0]} episode "
                f"titles, {kept[0]} distinct images ({int(kept[1]) >> 10} KiB)"
            )
        finally:
            await fetcher.close()


async def flood(feeds: int, host: str, tmp: Path, batch_min_s: float) -> None:
    import logging

    from aiohttp.resolver import ThreadedResolver

    class Counting(ThreadedResolver):
        lookups = 0

        async def resolve(self, *args: Any, **kwargs: Any) -> Any:
            Counting.lookups += 1
            return await super().resolve(*args, **kwargs)

    class Lines(logging.Handler):
        count = 0

        def emit(self, record: logging.LogRecord) -> None:
            Lines.count += 1

    feeds_log = logging.getLogger("podsync.feeds")
    feeds_log.setLevel(logging.INFO)
    feeds_log.addHandler(Lines())
    config_path = tmp / "podsync.toml"
    config_path.write_text(f'[database]\npath = "{tmp / "bench.db"}"\n')
    config = load_config(config_path, environ={})
    async with Database(config.database.path, config.database.durability) as db:
        user_id = await bench_user(db)
        moment = timestamps.now_us() - HOUR_US
        sync = SyncService(db, config.sync)
        for start in range(0, feeds, 500):
            urls = [f"https://{host}/{n}.xml" for n in range(start, min(feeds, start + 500))]
            await sync.apply(user_id, None, [Subscribe(url, moment) for url in urls])
        fetcher = FeedFetcher(db, FeedClient(resolver=Counting()), 24, batch_min_s=batch_min_s)
        await fetcher.open()
        try:
            commits, wall, used = db.commits, time.perf_counter(), cpu()
            done = await fetcher.run_once()
            wall, used, commits = time.perf_counter() - wall, cpu() - used, db.commits - commits
        finally:
            await fetcher.close()
        async with db.read() as conn:
            row = await conn.fetch_one(
                "SELECT count(*), count(last_error), min(failures), max(failures), "
                "count(DISTINCT last_error) FROM feed_info"
            )
        assert done == feeds and tuple(row) == (feeds, feeds, 1, 1, 1), (done, tuple(row))
        print(
            f"{feeds} feeds on {host} (durability {config.database.durability}, "
            f"batches of 16 at least {batch_min_s:g} s apart): "
            f"{wall:.2f} s wall, {used:.2f} s CPU ({used / feeds * 1000:.3f} ms per feed), "
            f"{commits} commits, {Counting.lookups} DNS lookups, {Lines.count} log lines"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--feeds", type=int, default=200)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument(
        "--flood", type=int, default=0, help="feeds on a host that does not resolve"
    )
    parser.add_argument("--flood-host", default="feeds.bench.invalid")
    parser.add_argument("--batch-min-s", type=float, default=BATCH_MIN_S, help="0: unpaced")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flood:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(flood(args.flood, args.flood_host, Path(tmp), args.batch_min_s))
        return
    if args.serve:
        serve(args.episodes)
        return
    command = [sys.executable, __file__, "--serve", "--episodes", str(args.episodes)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base = f"http://127.0.0.1:{int(server.stdout.readline())}"
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(measure(args.feeds, args.episodes, Path(tmp), base))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
