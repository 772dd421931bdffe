"""Layouts of the subscription table, by the log pages a commit of 30 new feeds writes.

A realistic instance (100 users with 1,000 subscriptions each, 30% unsubscribed),
then commits of 30 new feeds for one of them at `synchronous = FULL` with
checkpoints off, as bench/write_pages.py does for one big user. Three layouts:
0.4.0's seven indexes, schema step 28's six (one index on (user_id, id,
unsubscribed_at) for the two on (user_id, id)), and the table clustered on (user_id,
url_key) (`WITHOUT ROWID`), which still needs an index on the url key for the feed
fetcher and a unique one on id for the URL aliases and the list keyset. Then step
28's layout with one index dropped at a time: what each index costs.

    python bench/subscription_layouts.py [--users 100] [--feeds 1000] [--commits 200]

The tables are written here by SQL (the columns of docs/schema-sqlite.sql), not by
the migrations, so that layouts podsync does not use can be compared.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from podsync.feeds import derive_guid, new_uuid7, url_key

COLUMNS = (
    "user_id INTEGER NOT NULL, sync_id TEXT NOT NULL, guid TEXT NOT NULL, "
    "feed_url TEXT NOT NULL, url_key TEXT NOT NULL, title TEXT, "
    "subscribed_at INTEGER NOT NULL, unsubscribed_at INTEGER, last_updated INTEGER NOT NULL, "
    "last_client_id TEXT, change_seq INTEGER NOT NULL, changed_at INTEGER NOT NULL, "
    "view BLOB NOT NULL"
)
ROWID_TABLE = f"CREATE TABLE s (id INTEGER PRIMARY KEY, {COLUMNS}) STRICT"
COMMON = (
    "CREATE UNIQUE INDEX s_sync_id ON s(sync_id)",
    "CREATE INDEX s_changed_at ON s(user_id, changed_at)",
    "CREATE UNIQUE INDEX s_changes ON s(user_id, change_seq)",
    "CREATE INDEX s_guid ON s(user_id, guid)",
)
STEP_28 = (
    ROWID_TABLE,
    *COMMON,
    "CREATE UNIQUE INDEX s_url_key ON s(url_key, user_id)",
    "CREATE INDEX s_user ON s(user_id, id, unsubscribed_at)",
)
LAYOUTS = {
    "0.4.0: seven indexes": (
        ROWID_TABLE,
        *COMMON,
        "CREATE UNIQUE INDEX s_url_key ON s(url_key, user_id)",
        "CREATE INDEX s_all ON s(user_id, id)",
        "CREATE INDEX s_active ON s(user_id, id) WHERE unsubscribed_at IS NULL",
    ),
    "step 28: six indexes": STEP_28,
    "clustered on (user_id, url_key)": (
        f"CREATE TABLE s (id INTEGER NOT NULL, {COLUMNS}, PRIMARY KEY (user_id, url_key)) "
        "STRICT, WITHOUT ROWID",
        *COMMON,
        "CREATE INDEX s_url_key ON s(url_key)",
        "CREATE UNIQUE INDEX s_id ON s(id)",
        "CREATE INDEX s_user ON s(user_id, id, unsubscribed_at)",
    ),
}
INSERT = (
    "INSERT INTO s (id, user_id, sync_id, guid, feed_url, url_key, title, subscribed_at, "
    "unsubscribed_at, last_updated, last_client_id, change_seq, changed_at, view) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
VIEW = b"x" * 250  # about the size of a stored subscription view


def row(entity_id: int, user_id: int, seq: int) -> tuple[object, ...]:
    url = f"https://feeds{entity_id % 97}.example.net/{os.urandom(4).hex()}/{entity_id}.xml"
    gone = 2 if seq % 10 < 3 else None
    return (entity_id, user_id, new_uuid7(), derive_guid(url), url, url_key(url), None, 1,
            gone, 1, None, seq, seq, VIEW)  # fmt: skip


def measure(
    path: str, ddl: tuple[str, ...], users: int, feeds: int, commits: int
) -> tuple[float, float]:
    """(log pages, CPU ms) a commit of 30 new feeds for user 7."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    for statement in ddl:
        conn.execute(statement)
    conn.execute("BEGIN")
    entity_id = 0
    for user_id in range(1, users + 1):
        rows = []
        for seq in range(1, feeds + 1):
            entity_id += 1
            rows.append(row(entity_id, user_id, seq))
        conn.executemany(INSERT, rows)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    seq, cpu = feeds, 0.0
    for _ in range(commits):
        batch = []
        for _ in range(30):
            entity_id, seq = entity_id + 1, seq + 1
            batch.append(row(entity_id, 7, seq))
        started = time.process_time()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, batch)
        conn.execute("COMMIT")
        cpu += time.process_time() - started
    page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    frames = (os.path.getsize(path + "-wal") - 32) / (page + 24)
    conn.close()
    return frames / commits, cpu / commits * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--feeds", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=200)
    args = parser.parse_args()
    variants = dict(LAYOUTS)
    for index in ("s_sync_id", "s_changed_at", "s_changes", "s_guid", "s_url_key", "s_user"):
        variants[f"step 28 without {index}"] = tuple(s for s in STEP_28 if f" {index} " not in s)
    print(f"{args.users} users x {args.feeds} feeds; load average {os.getloadavg()[0]:.2f}")
    print("| layout | WAL pages per commit | CPU ms per commit |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for n, (name, ddl) in enumerate(variants.items()):
            path = os.path.join(directory, f"{n}.db")
            pages, ms = measure(path, ddl, args.users, args.feeds, args.commits)
            print(f"| {name} | {pages:.0f} | {ms:.2f} |")


if __name__ == "__main__":
    main()
