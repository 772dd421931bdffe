"""What one 30-feed subscription write costs SQLite, index by index.

Builds podsync's real SQLite schema (the migrations) in a temporary file, gives one
user N subscriptions, then times commits of 30 new feeds (the gpodder push of the
peer bench) at `synchronous = FULL` with checkpoints off, and counts the pages each
commit appends to the write-ahead log. Then the same with one index dropped at a
time: how many pages and how much CPU each index costs. An index on random keys
(a UUID, a URL key) touches a different leaf page for nearly every row, so a
commit of 30 rows writes ~30 pages for it; an index on an increasing key (ids,
sequence numbers) writes one or two.

    python bench/write_pages.py [--rows 100000] [--commits 300]

The first row uses random UUIDv4 sync ids, as podsync made before new entities got
time-ordered UUIDv7 ones; every other row uses UUIDv7.

Nothing here is a server: the figures are SQLite's own cost of the row layout, the
floor under the push paths' CPU per request.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from podsync.feeds import derive_guid, new_uuid7, url_key
from podsync.storage.migrations.sqlite import migrate
from podsync.store.subscriptions import _INSERT

VARIANTS: tuple[tuple[str, ...], ...] = (
    ("uuid4",),
    (),
    ("subscriptions_guid",),
    ("subscriptions_url_key",),
    ("subscriptions_changed_at",),
    ("subscriptions_user",),
    ("subscriptions_changes",),
)
VIEW = b"x" * 250  # about the size of a stored subscription view


class Rows:
    def __init__(self, new_id: Callable[[], str]) -> None:
        self.seq = 0
        self.new_id = new_id

    def make(self, n: int) -> list[tuple[object, ...]]:
        out = []
        for _ in range(n):
            self.seq += 1
            url = f"https://feeds.example.net/{os.urandom(6).hex()}/rss-{self.seq}.xml"
            out.append(
                (1, self.new_id(), derive_guid(url), url, url_key(url), None, 1, None, 1,
                 "client", self.seq, 1, VIEW)
            )  # fmt: skip
        return out


def measure(directory: str, dropped: tuple[str, ...], rows: int, commits: int) -> dict[str, float]:
    path = os.path.join(directory, f"{'-'.join(dropped) or 'all'}.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    migrate(conn)
    for index in dropped:
        if index != "uuid4":
            conn.execute(f"DROP INDEX {index}")
    conn.execute("INSERT INTO users (id, name, password_hash, created_at) VALUES (1, 'u', 'x', 0)")
    source = Rows((lambda: str(uuid.uuid4())) if "uuid4" in dropped else new_uuid7)
    conn.execute("BEGIN")
    for _ in range(rows // 1000):
        conn.executemany(_INSERT, source.make(1000))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    insert = commit = 0.0
    for _ in range(commits):
        batch = source.make(30)
        conn.execute("BEGIN IMMEDIATE")
        started = time.process_time()
        conn.executemany(_INSERT, batch)
        inserted = time.process_time()
        conn.execute("COMMIT")
        insert += inserted - started
        commit += time.process_time() - inserted
    frames = (os.path.getsize(path + "-wal") - 32) / (page + 24)
    conn.close()
    return {
        "pages": frames / commits,
        "insert_ms": insert / commits * 1000,
        "commit_ms": commit / commits * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--commits", type=int, default=300)
    args = parser.parse_args()
    print(f"one user with {args.rows:,} subscriptions; {args.commits} commits of 30 new feeds")
    print("| indexes | WAL pages per commit | INSERT CPU ms | COMMIT CPU ms |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for dropped in VARIANTS:
            got = measure(directory, dropped, args.rows, args.commits)
            if dropped == ("uuid4",):
                name = "all, random UUIDv4 sync ids (before)"
            elif not dropped:
                name = "all, UUIDv7 sync ids (today's schema)"
            else:
                name = "UUIDv7, without " + ", ".join(dropped)
            print(
                f"| {name} | {got['pages']:.0f} | {got['insert_ms']:.2f} | {got['commit_ms']:.2f} |"
            )


if __name__ == "__main__":
    main()
