"""One account's burst of writes on PostgreSQL, and another account's reads meanwhile.

    python bench/pg_burst.py                  # 5 bursts of 40 batches of 30 subscribes
    python bench/pg_burst.py --burst 80 --rounds 10

In one process (the services and a PostgresDatabase, no HTTP), alice sends BURST sync
batches at once, each waiting for the one before on her lock; 20 ms into each burst
bob reads his count of feeds five times, 10 ms apart. Prints how long bob's reads
took (median, 90th percentile, max) and how long the bursts took. Before a person's
writes queued in the process (`PostgresDatabase.write(user=...)`), a burst held
every connection of the pool and bob's reads waited behind it.

It starts a throwaway cluster with the tests' helper (tests/support/pg_cluster.py:
fsync off, as the tests run it); needs PostgreSQL's server and the test extra.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


async def measure(burst: int, rounds: int) -> dict[str, float]:
    from podsync import timestamps
    from podsync.config import SyncConfig
    from podsync.services.sync import SyncService
    from podsync.storage.postgres import PostgresDatabase
    from podsync.store import subscriptions, users
    from tests.support.pg_cluster import start_cluster
    from tests.support.sync_helpers import new_subscribes

    cluster = start_cluster()
    try:
        async with PostgresDatabase(cluster.new_database()) as db:
            async with db.write() as conn:
                alice = await users.create(conn, "alice", "x", timestamps.now_us())
                bob = await users.create(conn, "bob", "x", timestamps.now_us())
            big = 10**9
            sync = SyncService(
                db, SyncConfig(max_subscriptions_per_user=big, max_entities_per_user=big)
            )
            await sync.apply(bob.id, "laptop", *new_subscribes(0))
            reads: list[float] = []
            bursts: list[float] = []
            for n in range(rounds):
                start = time.perf_counter()
                batches = [
                    asyncio.create_task(sync.apply(alice.id, "phone", *new_subscribes(b)))
                    for b in range(1 + n * burst, 1 + (n + 1) * burst)
                ]
                await asyncio.sleep(0.02)
                for _ in range(5):
                    began = time.perf_counter()
                    async with db.read() as conn:
                        await subscriptions.count_entities(conn, bob.id)
                    reads.append((time.perf_counter() - began) * 1000)
                    await asyncio.sleep(0.01)
                await asyncio.gather(*batches)
                bursts.append((time.perf_counter() - start) * 1000)
    finally:
        cluster.stop()
    reads.sort()
    return {
        "read_median_ms": round(statistics.median(reads), 1),
        "read_p90_ms": round(reads[int(len(reads) * 0.9)], 1),
        "read_max_ms": round(reads[-1], 1),
        "burst_median_ms": round(statistics.median(bursts), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=40, help="alice's batches at once")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    try:
        from tests.support.pg_cluster import find_bin
    except ImportError as exc:  # asyncpg or pytest
        print(f"pg_burst.py needs the test extra (pip install '.[test]'): {exc}", file=sys.stderr)
        return 2
    if find_bin() is None:
        print("PostgreSQL's server is not installed (Debian: postgresql)", file=sys.stderr)
        return 2
    figures = asyncio.run(measure(args.burst, args.rounds))
    print(
        f"{args.rounds} bursts of {args.burst} batches of 30 subscribes from one account; "
        f"another account's reads meanwhile: median {figures['read_median_ms']} ms, "
        f"90th percentile {figures['read_p90_ms']} ms, max {figures['read_max_ms']} ms; "
        f"a burst took {figures['burst_median_ms']} ms (median)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
