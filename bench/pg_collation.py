"""What the database's collation costs PostgreSQL a sync batch.

    python bench/pg_collation.py                 # libc en_US.UTF-8 against LC_COLLATE C
    python bench/pg_collation.py --against icu   # ICU's en-US against LC_COLLATE C
    python bench/pg_collation.py --against c-utf8 --chunks 8 --json

One throwaway cluster, durable as a server would be (fsync, synchronous_commit and
full_page_writes on, shared_buffers 256MB), initialised under LOCALE (default
en_US.UTF-8, as the `postgres` container image; needs that locale on this machine:
Debian's locales package and locale-gen). Two databases in it: the one compared
(the cluster's default, or one made with ICU's en-US, or with C.UTF-8) and one made
with `LC_COLLATE 'C'`; podsync's schema steps run on both (since step 31 its keys
compare bytewise in either, and the two should cost the same). In one process (the
services, no HTTP), chunks of BATCHES sync batches of 30 new subscribes alternate
between the two, the order flipped each chunk. Prints PostgreSQL's CPU a batch on
each side (its backends', from /proc) and, per chunk, over this process's own CPU
for the same chunk: both sides do the same work, so that ratio holds while the
machine's speed moves (docs/performance.md). Needs PostgreSQL's server and the test extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from rounds import cpu_seconds  # noqa: E402

DURABLE = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "shared_buffers": "256MB",
}
AGAINST = {
    "default": "",  # the cluster's own collation, LOCALE's
    "icu": "LOCALE_PROVIDER icu ICU_LOCALE 'en-US'",
    "c-utf8": "LC_COLLATE 'C.UTF-8'",
}
BYTES = "LC_COLLATE 'C'"


async def _backends(url: str) -> list[int]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return [int(r[0]) for r in rows]
    finally:
        await conn.close()


async def measure(cluster: Any, against: str, chunks: int, batches: int) -> dict[str, Any]:
    import asyncpg

    from podsync import timestamps
    from podsync.config import SyncConfig
    from podsync.services.sync import SyncService
    from podsync.storage.postgres import PostgresDatabase
    from podsync.store import users
    from tests.support.sync_helpers import new_subscribes

    admin = await asyncpg.connect(cluster.url())
    try:
        for name, options in ((against, AGAINST[against]), ("bytes", BYTES)):
            await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 {options}')
    finally:
        await admin.close()
    big = 10**9
    sides: dict[str, tuple[PostgresDatabase, SyncService, int, str]] = {}
    figures: dict[str, list[tuple[float, float]]] = {against: [], "bytes": []}
    try:
        for name in figures:
            url = cluster.url(name)
            db = PostgresDatabase(url)
            await db.open()
            async with db.write() as conn:
                user = await users.create(conn, "alice", "x", timestamps.now_us())
            sync = SyncService(
                db, SyncConfig(max_subscriptions_per_user=big, max_entities_per_user=big)
            )
            await sync.apply(user.id, "phone", *new_subscribes(0))  # prepares the statements
            sides[name] = (db, sync, user.id, url)
        first = 1
        for chunk in range(chunks):
            order = list(figures) if chunk % 2 == 0 else list(reversed(figures))
            for name in order:
                _, sync, user_id, url = sides[name]
                pids = await _backends(url)
                pg_before = sum(cpu_seconds(p)[0] for p in pids)
                own_before = time.process_time()
                for n in range(first, first + batches):
                    await sync.apply(user_id, "phone", *new_subscribes(n))
                pg = sum(cpu_seconds(p)[0] for p in pids) - pg_before
                own = time.process_time() - own_before
                figures[name].append((1000 * pg / batches, pg / own))
            first += batches
    finally:
        for db, *_ in sides.values():
            await db.close()
    return {
        name: {
            "pg_cpu_ms_median": round(statistics.median(ms for ms, _ in rows), 2),
            "pg_cpu_ms_range": [
                round(min(r[0] for r in rows), 2),
                round(max(r[0] for r in rows), 2),
            ],
            "pg_over_own_cpu_median": round(statistics.median(x for _, x in rows), 2),
        }
        for name, rows in figures.items()
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locale", default="en_US.UTF-8", help="the cluster's locale")
    parser.add_argument("--against", choices=sorted(AGAINST), default="default")
    parser.add_argument("--chunks", type=int, default=16)
    parser.add_argument("--batches", type=int, default=100, help="sync batches a chunk")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        from tests.support.pg_cluster import Cluster, find_bin
    except ImportError as exc:  # asyncpg or pytest
        print(
            f"pg_collation.py needs the test extra (pip install '.[test]'): {exc}", file=sys.stderr
        )
        return 2
    bin_dir = find_bin()
    if bin_dir is None:
        print("PostgreSQL's server is not installed (Debian: postgresql)", file=sys.stderr)
        return 2
    # initdb takes the cluster's locale from the environment.
    os.environ["LC_ALL"] = os.environ["LANG"] = args.locale
    cluster = Cluster(bin_dir)
    try:
        try:
            cluster.start(**DURABLE)
        except Exception as exc:
            print(f"no cluster in locale {args.locale} (locale-gen?): {exc}", file=sys.stderr)
            return 2
        load = os.getloadavg()[0]
        result = asyncio.run(measure(cluster, args.against, args.chunks, args.batches))
    finally:
        cluster.stop()
    result = {
        "locale": args.locale,
        "against": args.against,
        "chunks": args.chunks,
        "batches": args.batches,
        "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
        "sides": result,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"a cluster in {args.locale}; {args.chunks} chunks of {args.batches} batches a side, "
        f"load {result['load_average'][0]}-{result['load_average'][1]}"
    )
    print("| database | PG CPU ms a batch, median (range) | over this process's CPU |")
    print("|---|---|---|")
    for name, side in result["sides"].items():
        low, high = side["pg_cpu_ms_range"]
        shown = (
            f"{args.against} ({AGAINST[args.against] or args.locale})" if name != "bytes" else BYTES
        )
        median, ratio = side["pg_cpu_ms_median"], side["pg_over_own_cpu_median"]
        print(f"| {shown} | {median} ({low}-{high}) | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
