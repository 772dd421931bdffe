"""Writes that grow with a person's data do not hold the event loop, and with it
every other request of the server, until they are done (a few times longer on a
Raspberry Pi than on the 2-core test machine):

- deleting an account (the admin page's Delete, `podsync user delete`) runs on a
  worker thread: its cascade deletes the person's whole history in one statement,
  0.6 s at 200,000 plays;
- an app's big episode upload (5,000 new plays, about the default body limit, held
  the loop 60-80 ms) lets the loop's other work in between its statements, and its
  items are parsed a slice at a time between passes of the loop.

The checks read, in SQLite's trace callback, the thread a statement ran on and how
often another task had run by then."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from podsync.config import Config
from podsync.services.accounts import AccountService
from podsync.services.episodes import writes as episode_writes
from podsync.services.episodes.writes import EpisodeWrites
from podsync.storage import sqlite_connection
from podsync.storage.sqlite import Database
from tests.conftest import cheap_passwords


def _plays(count: int, first: int = 0) -> list[dict[str, Any]]:
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
        for n in range(first, first + count)
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


@pytest.mark.parametrize("slice_s", [0.0, 60.0])
async def test_a_big_episode_upload_lets_other_requests_in_between_its_statements(
    config: Config, create_user: Any, monkeypatch: pytest.MonkeyPatch, slice_s: float
) -> None:
    """Its statements stay on the loop (a hop each to a thread cost 40% more CPU),
    and once the block has held the loop for the slice, the loop's other work runs
    at its next statement. A block within its slice runs through."""
    monkeypatch.setattr(sqlite_connection, "SLICE_S", slice_s)
    alice = (await create_user("alice")).id
    passes = [0]
    stop = asyncio.Event()

    async def other_requests() -> None:
        while not stop.is_set():
            passes[0] += 1
            await asyncio.sleep(0)

    async with Database(config.database.path) as db:
        seen: list[tuple[int, int]] = []

        def traced(sql: str) -> None:
            if sql.startswith("INSERT INTO episode_actions"):
                seen.append((threading.get_ident(), passes[0]))

        assert db._writer is not None
        db._writer.set_trace_callback(traced)
        other = asyncio.create_task(other_requests())
        await asyncio.sleep(0)
        done = await EpisodeWrites(db).upload(alice, _plays(300))
        stop.set()
        await other
        db._writer.set_trace_callback(None)
        async with db.read() as conn:
            stored = await conn.fetch_one(
                "SELECT count(*) FROM episode_actions WHERE user_id = ?", (alice,)
            )
    assert done.stored == stored[0] == 300
    assert len(seen) > 2, "the upload's rows went in fewer statements than expected"
    assert {thread for thread, _ in seen} == {threading.get_ident()}
    others_ran = len({count for _, count in seen}) > 1
    assert others_ran == (slice_s == 0.0)


class _Watched(list[dict[str, Any]]):
    """An upload's items that note, as each is read, how often another task has run."""

    def __init__(self, items: list[dict[str, Any]], passes: list[int]) -> None:
        super().__init__(items)
        self.passes = passes
        self.seen: list[int] = []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for item in super().__iter__():
            self.seen.append(self.passes[0])
            yield item


async def test_a_big_uploads_items_are_parsed_between_passes_of_the_loop(
    config: Config, create_user: Any
) -> None:
    alice = (await create_user("alice")).id
    slices = 3
    passes = [0]
    stop = asyncio.Event()

    async def other_requests() -> None:
        while not stop.is_set():
            passes[0] += 1
            await asyncio.sleep(0)

    async with Database(config.database.path) as db:
        items = _Watched(_plays(episode_writes.PARSE_SLICE * slices), passes)
        other = asyncio.create_task(other_requests())
        await asyncio.sleep(0)
        done = await EpisodeWrites(db).upload(alice, items)
        stop.set()
        await other
    assert done.stored == episode_writes.PARSE_SLICE * slices
    # The other task ran between the slices and never within one: a run of items
    # read between two of its passes is a slice (and the item read as it ends).
    runs = [len(list(run)) for _, run in itertools.groupby(items.seen)]
    assert len(runs) == slices
    assert max(runs) <= episode_writes.PARSE_SLICE + 1
