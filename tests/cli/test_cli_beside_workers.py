"""The CLI's writes beside a real `podsync serve --workers 2` under write load.

The workers take turns on a `flock` (storage/sqlite_write_turn.py); a CLI command
opens its own SQLite engine, takes no such turn and competes for the write lock
through SQLite's busy handler. Under load from both workers, every CLI command that
writes (`user add`, `opml import`, `user app-passwords --create`) still succeeds
and keeps what it wrote, and no client's write is refused or lost meanwhile."""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path

import aiohttp

from tests.conftest import PASSWORD
from tests.support.ledger import OpaWriter
from tests.support.workers_support import ServerTree

CLIENTS = 4
ROUNDS = 3  # of the CLI's commands
OPML_FEEDS = 150
TIMEOUT = aiohttp.ClientTimeout(total=30)
# The clients write tens of thousands of feeds: past the per-user limits, their later
# actions would be refused inside a 200 (a result per action), not stored.
NO_LIMITS = "[sync]\nmax_subscriptions_per_user = 10000000\nmax_entities_per_user = 10000000\n"
# Batches the clients must have written meanwhile (a quiet machine writes over 1000).
MIN_BATCHES = 50


async def post_until(base: str, writer: OpaWriter, tag: str, stop: asyncio.Event) -> None:
    """Fresh sync batches, one after another, until `stop`; each must be a 200."""
    async with aiohttp.ClientSession(base, timeout=TIMEOUT) as session:
        await writer.keep_posting(session, tag, stop)


def opml_file(path: Path, round_no: int) -> Path:
    outlines = "\n".join(
        f'<outline type="rss" text="F{i}" xmlUrl="https://cli.example/{round_no}/{i}/rss"/>'
        for i in range(OPML_FEEDS)
    )
    path.write_text(f'<?xml version="1.0"?><opml version="2.0"><body>{outlines}</body></opml>')
    return path


def cli_commands(tree: ServerTree, failures: list[str], done: list[str]) -> None:
    """Each round: a user added, an OPML file imported, an app password made."""
    for n in range(ROUNDS):
        opml = opml_file(tree.directory / f"cli{n}.opml", n)
        for args, stdin in (
            (("user", "add", f"cli{n}", "--password-stdin"), PASSWORD + "\n"),
            (("opml", "import", "alice", str(opml)), ""),
            (("user", "app-passwords", "alice", "--create", f"cli {n}"), ""),
        ):
            result = tree.cli(*args, stdin=stdin)
            if result.returncode != 0:
                failures.append(f"{' '.join(args)}: {result.returncode} {result.stderr}")
            else:
                done.append(args[1])


def rows(database: Path, sql: str) -> set[str]:
    with closing(sqlite3.connect(database)) as conn:
        return {row[0] for row in conn.execute(sql)}


async def test_cli_writes_beside_two_busy_workers_are_neither_refused_nor_lost(
    tmp_path: Path,
) -> None:
    tree = ServerTree(tmp_path, workers=2, extra=NO_LIMITS)
    added = tree.cli("user", "add", "alice", "--password-stdin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    writer = OpaWriter()
    failures: list[str] = []
    done: list[str] = []
    stop = asyncio.Event()
    with tree:
        async with aiohttp.ClientSession(tree.base_url, timeout=TIMEOUT) as session:
            await writer.prepare(session)
        clients = [
            asyncio.create_task(post_until(tree.base_url, writer, f"c{i}", stop))
            for i in range(CLIENTS)
        ]
        await asyncio.sleep(0.5)  # the workers write before the CLI begins
        try:
            await asyncio.to_thread(cli_commands, tree, failures, done)
        finally:
            stop.set()
            await asyncio.gather(*clients)  # a refused batch fails its post's assert
        async with aiohttp.ClientSession(tree.base_url, timeout=TIMEOUT) as session:
            await writer.check_survivors(session)  # every acknowledged action is there
        assert tree.stop() == 0
    assert failures == []
    assert len(done) == 3 * ROUNDS
    ledger = writer.ledger
    assert ledger.in_flight == 0  # nothing cut off: every batch was answered 200
    assert len(ledger.acknowledged) >= MIN_BATCHES  # the workers did write all along
    database = tmp_path / "podsync.db"
    feeds = rows(database, "SELECT feed_url FROM subscriptions")
    for n in range(ROUNDS):
        assert {f"https://cli.example/{n}/{i}/rss" for i in range(OPML_FEEDS)} <= feeds
    users = rows(database, "SELECT name FROM users")
    assert {f"cli{n}" for n in range(ROUNDS)} <= users
    labels = rows(database, "SELECT name FROM app_passwords")
    assert {f"cli {n}" for n in range(ROUNDS)} <= labels
