"""The upgrade of a heavy user's database to per-user numbers and episode actions kept
once per episode: its size before and after, and how long the step takes.

A database of the release before (the schema steps before the one that makes the
change) gets bench/heavy_user.py's account, written as that release wrote it (each
action with its URLs, a content hash and its JSON view; subscriptions on the one
counter of the database); then podsync opens it, which migrates.

    python bench/migration_size.py                                   # SQLite, 200,000
    python bench/migration_size.py --database-url postgresql://USER@HOST:PORT/DB
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.support.migration_support

from podsync.config import Config, load_config
from podsync.services.episodes.items import parse_item
from podsync.storage.engine import Engine, create_engine
from podsync.storage.migrations import sqlite as sqlite_migrations
from podsync.storage.migrations.sqlite_per_user import per_user_numbers
from tests.support.migration_support import (
    add_user,
    database_at,
    store_actions_as_before,
    subscribe_as_before,
)

BEFORE = sqlite_migrations.MIGRATIONS.index(per_user_numbers)
NOW = 1_700_000_000_000_000
DEVICES = [f"phone{i}" for i in range(5)]


def heavy_actions(start: int, end: int, nfeeds: int, feeds: list[str]) -> list[dict[str, Any]]:
    out = []
    for j in range(start, end):
        f = j % nfeeds
        when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_600_000_000 + j * 60))
        out.append({"podcast": feeds[f % len(feeds)],
                    "episode": f"https://media.example.org/show{f}/ep{j // nfeeds}.mp3",
                    "guid": f"show{f}-ep{j // nfeeds}", "action": "play", "timestamp": when,
                    "started": 0, "position": 60 + j % 3000, "total": 3600,
                    "device": DEVICES[j % 5]})  # fmt: skip
    return out


def file_mb(path: str) -> float:
    """The SQLite file's size, its log checkpointed into it first."""
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    return round(Path(path).stat().st_size / 1e6, 1)


async def size_mb(db: Engine, config: Config) -> float:
    if not config.database.url:
        return file_mb(config.database.path)
    async with db.read() as conn:
        row = await conn.fetch_one("SELECT pg_database_size(current_database())")
    return round(int(row[0]) / 1e6, 1)


async def run(config: Config, actions: int, subs: int) -> dict[str, Any]:
    engine = "postgresql" if config.database.url else "sqlite"
    feeds = [f"https://feeds.example.org/show{i}/rss.xml" for i in range(subs)]
    nfeeds = max(1, actions // 200)
    async with database_at(config, engine, BEFORE) as db:
        user = await add_user(db, "heavy")
        await subscribe_as_before(db, user, feeds, NOW)
        for start in range(0, actions, 1000):
            items = heavy_actions(start, min(start + 1000, actions), nfeeds, feeds)
            parsed = [parse_item(item, NOW, {}) for item in items]
            await store_actions_as_before(db, user, parsed, NOW + start, BEFORE)
        before = await size_mb(db, config)
    db = create_engine(config.database)
    began = time.perf_counter()
    await db.open()  # migrates (and, on SQLite, compacts)
    took = time.perf_counter() - began
    try:
        after = await size_mb(db, config)
    finally:
        await db.close()
    return {"engine": engine, "actions": actions, "subscriptions": subs, "before_mb": before,
            "after_mb": after, "migration_s": round(took, 1)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--actions", type=int, default=200_000)
    ap.add_argument("--subs", type=int, default=2000)
    ap.add_argument("--database-url", default="")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="migration-size-") as work:
        url = f'url = "{a.database_url}"\n' if a.database_url else ""
        path = Path(work) / "podsync.toml"
        path.write_text(f'[database]\npath = "{Path(work) / "podsync.db"}"\n{url}')
        result = asyncio.run(run(load_config(path, environ={}), a.actions, a.subs))
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
