#!/usr/bin/env python3
"""What the Overview costs for a person with a long history: one account with
--plays plays of 200 episodes (none finished, so Continue listening reads as far as
it may), on a temporary SQLite database (or an empty PostgreSQL database with
--database-url); the median of --rounds calls of Continue listening, with the rows
it read, and of the Overview's counts: the history's count as kept on the person's
row (schema step 30) beside counting the history, as the Overview did before.

    python bench/overview_cost.py --plays 20000
    python bench/overview_cost.py --plays 200000 --database-url postgresql://...
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from podsync.config import load_config
from podsync.services.accounts import AccountService
from podsync.services.browsing import BrowseService
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.listening import ListeningService
from podsync.services.passwords import PasswordService
from podsync.services.sync import SyncService
from podsync.storage.engine import create_engine
from podsync.store import episode_actions, listening, users

START = datetime(2026, 1, 1)
T = TypeVar("T")


def plays(first: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "podcast": f"https://show{n % 10}.example/feed.xml",
            "episode": f"https://show{n % 10}.example/{n % 200}.mp3",
            "action": "play",
            "timestamp": (START + timedelta(seconds=30 * n)).strftime("%Y-%m-%dT%H:%M:%S"),
            "started": n // 200,
            "position": n // 200 + 30,
            "total": 1_000_000,
        }
        for n in range(first, first + count)
    ]


def median_ms(times: list[float]) -> str:
    return f"{statistics.median(times):.2f} ms (min {min(times):.2f})"


async def timed(step: Awaitable[T], times: list[float]) -> T:
    """`step`'s result; how long it took (ms) goes into `times`."""
    started = time.perf_counter()
    result = await step
    times.append((time.perf_counter() - started) * 1000)
    return result


async def main(count: int, rounds: int, url: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "podsync.toml"
        where = f'url = "{url}"' if url else f'path = "{Path(folder) / "podsync.db"}"'
        path.write_text(f"[database]\n{where}\n")
        config = load_config(path, environ={})
        db = create_engine(config.database)
        await db.open()
        passwords = PasswordService(1, 7168, 5)
        try:
            await AccountService(db, passwords).add_user("heavy", "a-long-password-1")
            async with db.read() as conn:
                user = await users.require_by_name(conn, "heavy")
            writes = EpisodeWrites(db, UploadBounds(config.gpodder))
            for first in range(0, count, 1000):
                await writes.upload(user.id, plays(first, min(1000, count - first)))
            read: list[int] = []
            latest_plays = listening.latest_plays

            async def counted(*args: Any) -> list[listening.HistoryRow]:
                rows = await latest_plays(*args)
                read.append(len(rows))
                return rows

            listening.latest_plays = counted  # type: ignore[assignment]
            service = ListeningService(db)
            times: list[float] = []
            for _ in range(rounds):
                read.clear()
                await timed(service.continue_listening(user), times)
            print(
                f"{count} plays, medians of {rounds} calls: Continue listening "
                f"{median_ms(times)}, {sum(read)} rows read"
            )
            browsing = BrowseService(db, SyncService(db, config.sync), None)
            kept: list[float] = []
            counted_rows: list[float] = []
            overview: list[float] = []
            for _ in range(rounds):
                async with db.read() as conn:
                    held = await timed(episode_actions.count_for_user(conn, user.id), kept)
                    row = await timed(
                        conn.fetch_one(
                            "SELECT count(*) FROM episode_actions WHERE user_id = ?", (user.id,)
                        ),
                        counted_rows,
                    )
                assert held == int(row[0]) == count, (held, row[0], count)
                await timed(browsing.overview(user), overview)
            print(
                f"the history's count: kept {median_ms(kept)}, counted "
                f"{median_ms(counted_rows)}; the Overview's counts {median_ms(overview)}"
            )
        finally:
            passwords.close()
            await db.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--plays", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--database-url", help="an empty PostgreSQL database (else SQLite)")
    args = ap.parse_args()
    asyncio.run(main(args.plays, args.rounds, args.database_url))
