"""Running the real CLI (Click's CliRunner) on the test's config, and reading what
it stored straight from the SQLite file."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from click.testing import CliRunner, Result

from podsync.cli import cli
from podsync.config import Config
from podsync.rules import Unsubscribe
from podsync.services.sync import SyncService
from podsync.storage.sqlite import Database
from tests.conftest import PASSWORD


def config_path(config: Config) -> str:
    return str(Path(config.database.path).parent / "podsync.toml")


def run(
    config: Config,
    *args: str,
    input: str | bytes | None = None,
    env: dict[str, str | None] | None = None,
) -> Result:
    return CliRunner().invoke(cli, ["--config", config_path(config), *args], input=input, env=env)


def add_user(config: Config, name: str = "alice", password: str = PASSWORD) -> None:
    result = run(config, "user", "add", name, "--password-stdin", input=password + "\n")
    assert result.exit_code == 0, result.output


def stored(config: Config, name: str = "alice") -> set[tuple[str, str | None, bool]]:
    """(feed_url, title, subscribed) of every entity of the user."""
    with closing(sqlite3.connect(config.database.path)) as conn:
        rows = conn.execute(
            "SELECT s.feed_url, s.title, s.unsubscribed_at IS NULL FROM subscriptions s "
            "JOIN users u ON u.id = s.user_id WHERE u.name = ?",
            (name,),
        ).fetchall()
    return {(url, title, bool(subscribed)) for url, title, subscribed in rows}


def dump(config: Config) -> list[str]:
    """Every row of every table, to compare a database before and after."""
    with closing(sqlite3.connect(config.database.path)) as conn:
        return list(conn.iterdump())


def big_opml(path: Path, feeds: int) -> None:
    outlines = "\n".join(
        f'<outline type="rss" text="Feed {i}" xmlUrl="https://feeds.example.com/{i}/rss"/>'
        for i in range(feeds)
    )
    path.write_text(f'<opml version="2.0"><body>\n{outlines}\n</body></opml>\n')


def unsubscribe(config: Config, feed_url: str, occurred_at: int) -> None:
    """An unsubscribe sent through the same sync rules the API uses."""

    async def send() -> None:
        async with Database(config.database.path) as db:
            with closing(sqlite3.connect(config.database.path)) as conn:
                (user_id,) = conn.execute("SELECT id FROM users WHERE name = 'alice'").fetchone()
            command = Unsubscribe(occurred_at, feed_url=feed_url)
            outcome = await SyncService(db, config.sync).apply(user_id, None, [command])
            [result] = outcome.results
            assert result.status == "applied", result

    asyncio.run(send())


def podsync_process(
    args: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m podsync ARGS` in a process of its own, with exactly `env` (plus a
    PATH) and no terminal: what an admin's shell or a service manager runs."""
    return subprocess.run(
        [sys.executable, "-m", "podsync", *args],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
