"""Time one list page at 1,000 and 100,000 subscriptions of one user, and show the
query plans of the list and change-feed queries.

    python bench/list_page.py [--sizes 1000,100000] [--requests 200]

Seeds through the real sync service (SyncService.apply), serves the real app
on a loopback port, and times GET /api/v1/subscriptions pages of 50 at the start and
at the end of the list over HTTP. Prints the SQL the store runs and SQLite's
EXPLAIN QUERY PLAN for each.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from podsync import timestamps
from podsync.config import Config, load_config
from podsync.rules import Subscribe
from podsync.serve.server import start
from podsync.services.accounts import AccountService
from podsync.services.auth import load_secret_key
from podsync.services.listing import NEXT, ListingService
from podsync.services.passwords import PasswordService
from podsync.services.sync import SyncService
from podsync.storage.sqlite import Database

PASSWORD = "benchmark-password"
PAGE = 50


async def seed(config: Config, count: int) -> tuple[int, str, int]:
    """Create user `bench` with `count` subscriptions; return (user id, secret, max id)."""
    async with Database(config.database.path, config.database.durability) as db:
        passwords = PasswordService()
        try:
            user = await AccountService(db, passwords).add_user("bench", PASSWORD)
        finally:
            passwords.close()
        sync = SyncService(db, config.sync)
        moment = timestamps.now_us() - 3_600_000_000
        for start_at in range(0, count, 2000):
            commands = [
                Subscribe(f"https://feeds{i}.example.org/podcast/rss", moment)
                for i in range(start_at, min(count, start_at + 2000))
            ]
            await sync.apply(user.id, None, commands)
        secret = await load_secret_key(db, "")
        async with db.read() as conn:
            row = await conn.fetch_one(
                "SELECT max(id) FROM subscriptions WHERE user_id = ?", (user.id,)
            )
        assert row is not None
        return user.id, secret, int(row[0])


async def time_pages(base: str, token: str, url: str, requests: int) -> list[float]:
    headers = {"Authorization": f"Bearer {token}"}
    times = []
    async with aiohttp.ClientSession(base) as session:
        for _ in range(requests):
            began = time.perf_counter()
            async with session.get(url, headers=headers) as response:
                body = await response.json()
                assert response.status == 200, body
                assert len(body["results"]) == PAGE, len(body["results"])
            times.append((time.perf_counter() - began) * 1000)
    return times


async def query_plans(config: Config, user_id: int, secret: str, last_id: int) -> None:
    """Run the list and feed reads once with a trace on, and explain what they ran."""
    # One reader connection (reads run on the loop and return it), so the trace sees
    # every query.
    async with Database(config.database.path, config.database.durability) as db:
        listing = ListingService(db, secret)
        executed: list[str] = []
        async with db.read() as conn:
            conn.raw.set_trace_callback(executed.append)
        await listing.page(user_id, None, PAGE, False)
        await listing.page(user_id, listing.cursors.make(NEXT, user_id, last_id - PAGE), PAGE, True)
        await listing.changes(user_id, None, PAGE, "0b9a9f3e-2f8e-4c39-9d1c-2f1f7d1e6a11")
        async with db.read() as conn:
            conn.raw.set_trace_callback(None)
            for sql in executed:
                if not sql.lstrip().upper().startswith("SELECT"):
                    continue
                print(f"\nSQL: {' '.join(sql.split())}")
                for row in await conn.fetch_all(f"EXPLAIN QUERY PLAN {sql}"):
                    print(f"  plan: {row[3]}")


def summary(times: list[float]) -> str:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"median {statistics.median(times):6.2f} ms  p99 {p99:6.2f} ms"


async def measure(size: int, requests: int, explain: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "podsync.toml"
        path.write_text(
            f'[database]\npath = "{Path(tmp) / "bench.db"}"\n'
            "[server]\nport = 0\n[sync]\nmax_subscriptions_per_user = 10000000\n"
            '[log]\naccess_log = false\nlevel = "warning"\n'
            "[feeds]\nfetch_metadata = false\n"  # its feeds are not served anywhere
        )
        config = load_config(path, environ={})
        began = time.perf_counter()
        user_id, secret, last_id = await seed(config, size)
        seeded = time.perf_counter() - began
        runner, urls = await start(config)
        try:
            async with aiohttp.ClientSession(urls[0]) as session:
                login = await session.post(
                    "/auth/login", json={"username": "bench", "password": PASSWORD}
                )
                token = (await login.json())["access_token"]
            listing = ListingService(Database(config.database.path), secret)
            end_cursor = listing.cursors.make(NEXT, user_id, last_id - PAGE)
            start_times = await time_pages(urls[0], token, "/api/v1/subscriptions", requests)
            end_times = await time_pages(
                urls[0], token, f"/api/v1/subscriptions?since={end_cursor}", requests
            )
        finally:
            await runner.cleanup()
        ratio = statistics.median(end_times) / statistics.median(start_times)
        print(f"\n{size:>7} subscriptions (seeded in {seeded:.1f} s), page of {PAGE} over HTTP:")
        print(f"  first page: {summary(start_times)}")
        print(f"  last page:  {summary(end_times)}")
        print(f"  last/first median ratio: {ratio:.2f}")
        if explain:
            await query_plans(config, user_id, secret, last_id)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for index, size in enumerate(sizes):
        await measure(size, args.requests, explain=index == len(sizes) - 1)


if __name__ == "__main__":
    asyncio.run(main())
