"""Deleting an account (the admin page's Delete, `podsync user delete`) runs its
cascade on a worker thread on SQLite, not on the event loop: the cascade deletes the
person's whole history (0.6 s at 200,000 plays on a 2-core test machine, a few
times that on a Raspberry Pi), which held every other request of the server meanwhile. The
check is the thread the DELETE itself ran on (SQLite calls its trace callback on
it); the account and everything of it are gone afterwards, the others' rows kept."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from podsync.config import Config
from podsync.services.accounts import AccountService
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage.sqlite import Database
from tests.conftest import cheap_passwords


def _plays(count: int) -> list[dict[str, Any]]:
    return [
        {
            "podcast": "https://show.example/feed.xml",
            "episode": f"https://show.example/{n}.mp3",
            "action": "play",
            "timestamp": "2026-01-01T00:00:00",
            "started": 0,
            "position": 60,
            "total": 3600,
        }
        for n in range(count)
    ]


async def test_an_accounts_deletion_runs_off_the_event_loop(
    config: Config, create_user: Any
) -> None:
    alice, bob = (await create_user("alice")).id, (await create_user("bob")).id
    async with Database(config.database.path) as db:
        with contextlib.closing(cheap_passwords(threads=1)) as passwords:
            writes = EpisodeWrites(db)
            await writes.upload(alice, _plays(300))
            await writes.upload(bob, _plays(5))
            ran_on: list[int] = []

            def traced(sql: str) -> None:
                if sql.startswith("DELETE FROM users"):
                    ran_on.append(threading.get_ident())

            assert db._writer is not None
            db._writer.set_trace_callback(traced)
            await AccountService(db, passwords).delete_user("alice")
            db._writer.set_trace_callback(None)
            # Once, and once again for each step of its cascade.
            assert ran_on, "no DELETE of the account"
            assert threading.get_ident() not in ran_on, "the cascade ran on the event loop"
            async with db.read() as conn:
                left = await conn.fetch_all(
                    "SELECT user_id, count(*) FROM episode_actions GROUP BY user_id"
                )
                names = await conn.fetch_all("SELECT name FROM users ORDER BY name")
            assert [tuple(r) for r in left] == [(bob, 5)]
            assert [r[0] for r in names] == ["bob"]
