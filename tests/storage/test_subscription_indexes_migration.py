"""Schema step 28 on both engines, from a database of 0.3.0: one index on (user_id,
id, unsubscribed_at) replaces the index of every entity of a user and the partial
one of the subscribed. Every row survives; the list pages, subscribed or all,
forward and back, the counts and the gpodder list answer as before the step; and
what is written after it is found the same way."""

from __future__ import annotations

from typing import Any

import pytest

from podsync.config import Config
from podsync.rules import Subscribe, Unsubscribe
from podsync.services.sync import SyncService
from podsync.storage.engine import Engine, create_engine
from podsync.storage.maintenance import check
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.store import subscription_stream, subscriptions
from tests.support.migration_support import add_user, database_at

pytestmark = pytest.mark.both_engines

RELEASE_0_3_0 = 24  # the schema version 0.3.0 left
MIDDLE = 6  # an id near the middle of alice's entities (bob's come after hers)
STEP = next(n for n, s in enumerate(MIGRATIONS, 1) if "subscriptions_user" in str(s))


async def indexes(db: Engine, engine: str) -> set[str]:
    """The names of the subscription table's indexes on user_id and id."""
    async with db.read() as conn:
        if engine == "sqlite":
            rows = await conn.fetch_all(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'subscriptions'"
            )
        else:
            rows = await conn.fetch_all(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                "AND tablename = 'subscriptions'"
            )
    return {str(r[0]) for r in rows} & {"subscriptions_active", "subscriptions_all",
                                        "subscriptions_user"}  # fmt: skip


async def stored(db: Engine) -> list[tuple[Any, ...]]:
    """Every row of the table, by SQL that needs no index of the step."""
    async with db.read() as conn:
        rows = await conn.fetch_all(
            "SELECT id, user_id, sync_id, guid, feed_url, url_key, subscribed_at, "
            "unsubscribed_at, change_seq, view FROM subscriptions ORDER BY id"
        )
    return [tuple(r) for r in rows]


async def answers(db: Engine, user_id: int) -> dict[str, Any]:
    """What the reads that used the two indexes answer for the user."""
    async with db.read() as conn:
        out: dict[str, Any] = {
            "subscribed": await subscriptions.count_subscribed(conn, user_id),
            "urls": await subscription_stream.subscribed_urls(conn, user_id),
            "titles": await subscription_stream.subscribed_titles(conn, user_id),
            "held": [tuple(h) for h in await subscription_stream.held_after(conn, user_id, 0, 99)],
        }
        for every in (False, True):
            ids = [s.id for s in await subscriptions.list_all(conn, user_id, every)]
            out[f"list {every}"] = ids
            out[f"feeds {every}"] = await subscriptions.feeds_after(conn, user_id, every, 0, 99)
            for forward in (True, False):
                out[f"page {every} {forward}"] = await subscriptions.page_and_edge(
                    conn, user_id, MIDDLE, forward, every, 3
                )
                out[f"beyond {every} {forward}"] = await subscriptions.exists_beyond(
                    conn, user_id, MIDDLE, forward, every
                )
    return out


def expected(rows: list[tuple[Any, ...]], user_id: int) -> dict[str, Any]:
    """The same answers, worked out from the stored rows."""
    mine = [r for r in rows if r[1] == user_id]
    out: dict[str, Any] = {
        "subscribed": sum(r[7] is None for r in mine),
        "urls": [r[4] for r in mine if r[7] is None],
        "titles": [(r[4], None) for r in mine if r[7] is None],
        "held": [(r[0], r[4], r[5], r[3], r[7] is None) for r in mine],
    }
    for every in (False, True):
        shown = [r for r in mine if every or r[7] is None]
        out[f"list {every}"] = [r[0] for r in shown]
        out[f"feeds {every}"] = [(r[0], r[4], None) for r in shown]
        after = [r for r in shown if r[0] > MIDDLE]
        before = [r for r in reversed(shown) if r[0] < MIDDLE]
        # A page's flag says whether an entity lies on the other side (None: no page).
        out[f"page {every} True"] = (
            [(r[0], r[9]) for r in after[:3]],
            any(r[0] <= MIDDLE for r in shown) if after else None,
        )
        out[f"page {every} False"] = (
            [(r[0], r[9]) for r in before[:3]],
            any(r[0] >= MIDDLE for r in shown) if before else None,
        )
        out[f"beyond {every} True"] = bool(after)
        out[f"beyond {every} False"] = bool(before)
    return out


async def test_step_28_keeps_every_row_and_every_answer(config: Config, db_engine: str) -> None:
    urls = [f"https://feeds.example/{n}.xml" for n in range(12)]
    async with database_at(config, db_engine, RELEASE_0_3_0) as db:
        assert await indexes(db, db_engine) == {"subscriptions_active", "subscriptions_all"}
        alice, bob = await add_user(db, "alice"), await add_user(db, "bob")
        sync = SyncService(db, config.sync)
        await sync.apply(alice, None, [Subscribe(feed_url=u) for u in urls])
        await sync.apply(bob, None, [Subscribe(feed_url=u) for u in urls[:5]])
        await sync.apply(alice, None, [Unsubscribe(feed_url=u) for u in urls[2:9:2]])
        rows = await stored(db)
    assert sum(r[1] == alice and r[7] is None for r in rows) == 8
    assert len(rows) == 17

    db = create_engine(config.database)
    await db.open()  # runs the steps after 0.3.0's
    try:
        assert await indexes(db, db_engine) == {"subscriptions_user"}
        assert STEP == 28
        assert await stored(db) == rows
        assert await answers(db, alice) == expected(rows, alice)
        if db_engine == "sqlite":
            assert check(config.database.path).problems == []
        # Written after the step: an unsubscribe and a new feed, found by both lists.
        sync = SyncService(db, config.sync)
        await sync.apply(alice, None, [Unsubscribe(feed_url=urls[0])])
        await sync.apply(alice, None, [Subscribe(feed_url="https://feeds.example/new.xml")])
        rows = await stored(db)
        assert len(rows) == 18
        assert await answers(db, alice) == expected(rows, alice)
        assert await answers(db, bob) == expected(rows, bob)
    finally:
        await db.close()
