"""SQLite's plan of every statement that reads or writes the subscription table, on
a realistic database: 100 users with 1,000 subscriptions each, 30% of them
unsubscribed (no statistics, as podsync runs). The statements are the store's own:
each store function runs against a connection that records its SQL, and the
recorded SQL is explained on the real schema (the migrations of this checkout).

    python bench/subscription_plans.py [--users 100] [--feeds 1000]

Each line is one statement's plan steps; a step that reads a user's rows says
SEARCH ... (user_id=?...), one that reads the whole table or index says SCAN.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from podsync.feeds import derive_guid, new_uuid7, url_key
from podsync.model import Subscription
from podsync.sorting import SQL_FUNCTION, sort_key
from podsync.storage.migrations.sqlite import migrate
from podsync.store import (
    artwork,
    browse,
    episode_search,
    feed_collection,
    feed_info,
    inbox,
    nextcloud_feed,
    stats,
    subscription_stream,
    subscriptions,
    users,
)
from podsync.store.subscriptions import _INSERT, _UPDATE, _UPDATE_KEPT

VIEW = b"x" * 250  # about the size of a stored subscription view


class Recording:
    """A Connection that runs nothing and keeps the SQL it was given."""

    dialect = "sqlite"

    def __init__(self) -> None:
        self.statements: list[tuple[str, list[Any]]] = []

    async def fetch_all(self, sql: str, params: Any = ()) -> list[Any]:
        self.statements.append((sql, list(params)))
        return []

    async def fetch_one(self, sql: str, params: Any = ()) -> Any:
        self.statements.append((sql, list(params)))
        return None

    async def execute(self, sql: str, params: Any = ()) -> int:
        self.statements.append((sql, list(params)))
        return 0

    async def execute_many(self, sql: str, rows: Any) -> None:
        self.statements.append((sql, list(rows[0])))


def fill(raw: sqlite3.Connection, user_count: int, feeds: int) -> None:
    """`user_count` users with `feeds` subscriptions each, 30% of them unsubscribed."""
    raw.execute("BEGIN")
    for user in range(1, user_count + 1):
        raw.execute(
            "INSERT INTO users (id, name, password_hash, created_at) VALUES (?, ?, 'x', 0)",
            (user, f"user{user}"),
        )
        rows = []
        for n in range(feeds):
            url = f"https://feeds{n % 97}.example.net/{os.urandom(4).hex()}/{n}.xml"
            gone = 2 if n % 10 < 3 else None
            rows.append(
                (user, new_uuid7(), derive_guid(url), url, url_key(url), None, 1, gone, 1,
                 None, n + 1, 1 + n, VIEW)
            )  # fmt: skip
        raw.executemany(_INSERT, rows)
        raw.execute("UPDATE users SET change_seq = ?, entity_count = ? WHERE id = ?",
                    (feeds, feeds, user))  # fmt: skip
    raw.execute("COMMIT")


def calls() -> list[tuple[str, Callable[[Any], Awaitable[object]]]]:
    """(name, store call) of every statement on the table, user 7's where one."""
    u, key, sid = 7, "feeds1.example.net/abcd/1.xml", "0190b2c4-0000-7000-8000-000000000001"
    entity = Subscription(1, u, sid, derive_guid(key), "https://" + key, key, None, 1, None,
                          1, None, 1, 1)  # fmt: skip
    keys = [f"feeds{n}.example.net/x/{n}.xml" for n in range(30)]
    return [
        ("get_by_sync_id", lambda c: subscriptions.get_by_sync_id(c, u, sid)),
        ("get_by_id", lambda c: subscriptions.get_by_id(c, u, 500)),
        ("get_by_url_key", lambda c: subscriptions.get_by_url_key(c, u, key)),
        (
            "find_matching (30 each)",
            lambda c: subscriptions.find_matching(
                c,
                u,
                [sid] * 1 + [f"{sid[:-2]}{n:02d}" for n in range(29)],
                keys,
                [derive_guid(k) for k in keys],
            ),
        ),
        ("list_all subscribed", lambda c: subscriptions.list_all(c, u, False)),
        ("list_all all", lambda c: subscriptions.list_all(c, u, True)),
        ("feeds_after subscribed", lambda c: subscriptions.feeds_after(c, u, False, 0, 500)),
        ("feeds_after all", lambda c: subscriptions.feeds_after(c, u, True, 0, 500)),
        ("save: park moved keys, update, insert", lambda c: _writes(c, entity)),
        ("count_subscribed", lambda c: subscriptions.count_subscribed(c, u)),
        ("user_seq", lambda c: subscriptions.user_seq(c, u)),
        (
            "page_and_edge subscribed",
            lambda c: subscriptions.page_and_edge(c, u, 300, True, False, 100),
        ),
        (
            "page_and_edge all, back",
            lambda c: subscriptions.page_and_edge(c, u, 300, False, True, 100),
        ),
        ("exists_beyond subscribed", lambda c: subscriptions.exists_beyond(c, u, 300, True, False)),
        ("exists_beyond all", lambda c: subscriptions.exists_beyond(c, u, 300, False, True)),
        ("changes_and_counter", lambda c: subscriptions.changes_and_counter(c, u, 900, "x", 100)),
        ("first_change_since", lambda c: subscriptions.first_change_since(c, u, 990)),
        ("held_after (list replace)", lambda c: subscription_stream.held_after(c, u, 0, 500)),
        ("subscribed_urls (gpodder)", lambda c: subscription_stream.subscribed_urls(c, u)),
        ("subscribed_titles (OPML)", lambda c: subscription_stream.subscribed_titles(c, u)),
        (
            "changed_between (gpodder)",
            lambda c: subscription_stream.changed_between(c, u, 900, 1000),
        ),
        ("alias_targets", lambda c: subscription_stream.alias_targets(c, u, ["https://a/"])),
        ("nextcloud changed_since", lambda c: nextcloud_feed.changed_since(c, u, 990, 995, "x")),
        ("nextcloud moved_since", lambda c: nextcloud_feed.moved_since(c, u, 990)),
        ("artwork used_by", lambda c: artwork.used_by(c, u)),
        ("artwork subscribers", lambda c: artwork.subscribers(c, key)),
        ("artwork image_for", lambda c: artwork.image_for(c, u, "ab" * 32)),
        ("ui page (title)", lambda c: browse.subscriptions_page(c, u, None, False, 0, 50)),
        ("ui page all, search", lambda c: browse.subscriptions_page(c, u, "news", True, 0, 50)),
        ("ui counts", lambda c: browse.subscription_counts(c, u)),
        ("ui history podcasts", lambda c: browse.history_podcasts(c, u)),
        ("ui search podcasts", lambda c: episode_search.podcasts(c, u)),
        ("ui search items", lambda c: episode_search.find(c, u, ["news"], 20, 0)),
        ("ui new episodes", lambda c: inbox.candidates(c, u, 50)),
        ("ui new episodes' count stamp", lambda c: inbox.count_stamp(c, u)),
        ("admin users", lambda c: users.list_summaries(c)),
        ("admin overview", lambda c: users.overview(c)),
        ("stats counts", lambda c: stats.counts(c)),
        ("fetcher: unreferenced feeds", lambda c: feed_collection.unreferenced(c, 5, 100)),
        ("fetcher: discover", lambda c: _discover(c)),
        ("fetcher: claim_due", lambda c: feed_info.claim_due(c, 5, 10, 10, "me")),
    ]


async def _writes(conn: Recording, entity: Subscription) -> None:
    names = ("guid", "feed_url", "url_key", "title", "subscribed_at", "unsubscribed_at",
             "last_updated", "last_client_id", "change_seq", "changed_at", "view")  # fmt: skip
    state = [getattr(entity, n) for n in names]
    kept = [getattr(entity, n) for n in names if n not in ("feed_url", "url_key")]
    await conn.execute(
        "UPDATE subscriptions SET url_key = '#' || sync_id WHERE user_id = ? AND sync_id = ?",
        (entity.user_id, entity.sync_id),
    )
    await conn.execute(_UPDATE_KEPT, (*kept, entity.user_id, entity.sync_id))
    await conn.execute(_UPDATE, (*state, entity.user_id, entity.sync_id))
    await conn.execute(_INSERT, (entity.user_id, entity.sync_id, *state))


async def _discover(conn: Recording) -> None:
    """feed_info.discover's read of a user's changes (its loop needs the users' rows)."""
    await conn.fetch_all(
        "SELECT change_seq, url_key, feed_url, unsubscribed_at FROM subscriptions "
        "WHERE user_id = ? AND change_seq > ? AND change_seq <= ? ORDER BY change_seq LIMIT ?",
        (7, 900, 1000, 100),
    )


def plans(raw: sqlite3.Connection) -> list[tuple[str, list[str]]]:
    out = []
    for name, call in calls():
        recording = Recording()
        # A function that reads its (absent) row after its statement stops there.
        with contextlib.suppress(TypeError, IndexError, AttributeError, AssertionError):
            asyncio.run(call(recording))
        for sql, params in recording.statements:
            if "subscriptions" not in sql:
                continue
            rows = raw.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall()
            out.append((name, [str(r[3]) for r in rows]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--feeds", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        raw = sqlite3.connect(os.path.join(directory, "plans.db"), isolation_level=None)
        raw.create_function(SQL_FUNCTION, 1, sort_key, deterministic=True)
        migrate(raw)
        fill(raw, args.users, args.feeds)
        for name, steps in plans(raw):
            print(f"{name}: " + " | ".join(steps))
        raw.close()


if __name__ == "__main__":
    main()
