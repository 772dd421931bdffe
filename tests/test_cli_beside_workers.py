"""The CLI's writes beside a real `podsync serve --workers 2` under write load.

The workers take turns on a `flock` (storage/sqlite_write_turn.py); a CLI command
opens its own SQLite engine, takes no such turn and competes for the write lock
through SQLite's busy handler. Under load from both workers, every CLI command that
writes (`user add`, `opml import`, `user app-passwords --create`) still succeeds
and keeps what it wrote, and no client's write is refused or lost meanwhile."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import aiohttp

from tests.conftest import PASSWORD
from tests.test_crash_safety import Ledger, login, new_batch
from tests.workers_support import ServerTree

CLIENTS = 4
ROUNDS = 3  # of the CLI's commands
OPML_FEEDS = 150
TIMEOUT = aiohttp.ClientTimeout(total=30)
# Batches the clients must have written meanwhile (a quiet machine writes over 1000).
MIN_BATCHES = 50


async def post_until(base: str, ledger: Ledger, tag: str, stop: threading.Event) -> list[int]:
    """Fresh sync batches, one after another, until `stop`: their statuses."""
    statuses: list[int] = []
    async with aiohttp.ClientSession(base, timeout=TIMEOUT) as session:
        auth = await login(session)
        seq = 0
        while not stop.is_set():
            batch = new_batch(f"{tag}/{seq}")
            seq += 1
            ledger.batches.append(batch)
            async with session.post(
                "/api/v1/sync", json={"requests": batch.actions}, headers=auth
            ) as response:
                statuses.append(response.status)
                if response.status == 200:
                    batch.results = (await response.json())["results"]
    return statuses


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
    tree = ServerTree(tmp_path, workers=2)
    added = tree.cli("user", "add", "alice", "--password-stdin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    ledger = Ledger()
    failures: list[str] = []
    done: list[str] = []
    stop = threading.Event()
    with tree:
        clients = [
            asyncio.create_task(post_until(tree.base_url, ledger, f"c{i}", stop))
            for i in range(CLIENTS)
        ]
        await asyncio.sleep(0.5)  # the workers write before the CLI begins
        try:
            await asyncio.to_thread(cli_commands, tree, failures, done)
        finally:
            stop.set()
            statuses = [s for task in await asyncio.gather(*clients) for s in task]
        assert tree.stop() == 0
    assert failures == []
    assert len(done) == 3 * ROUNDS
    assert set(statuses) == {200}, sorted(set(statuses))
    assert len(statuses) >= MIN_BATCHES  # the workers did write all along
    database = tmp_path / "podsync.db"
    feeds = rows(database, "SELECT feed_url FROM subscriptions")
    for n in range(ROUNDS):
        assert {f"https://cli.example/{n}/{i}/rss" for i in range(OPML_FEEDS)} <= feeds
    sent = {a["data"]["feed_url"] for b in ledger.acknowledged for a in b.actions}
    assert sent <= feeds, len(sent - feeds)
    users = rows(database, "SELECT name FROM users")
    assert {f"cli{n}" for n in range(ROUNDS)} <= users
    labels = rows(database, "SELECT name FROM app_passwords")
    assert {f"cli {n}" for n in range(ROUNDS)} <= labels
