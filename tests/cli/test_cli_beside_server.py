"""The CLI works on the database a running server is using: the server keeps
answering during an OPML import, and a backup taken while it writes is whole."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import uuid
from contextlib import closing
from pathlib import Path

from podsync import timestamps
from podsync.config import Config
from tests.conftest import PASSWORD
from tests.support.cli_support import add_user, big_opml
from tests.support.server_support import access_token, podsync_command, request, serving


class Poller(threading.Thread):
    """GET /healthz and an authenticated list, in turn, until stopped."""

    def __init__(self, base: str, token: str) -> None:
        super().__init__(daemon=True)
        self.base, self.token = base, token
        self.stop = threading.Event()
        self.statuses: list[int] = []
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            for path, token in (("/healthz", None), ("/api/v1/subscriptions", self.token)):
                try:
                    status, _ = request(self.base + path, token=token)
                    self.statuses.append(status)
                except OSError as exc:
                    self.failures.append(f"{path}: {exc}")


def test_the_server_answers_while_a_large_import_runs(config: Config, tmp_path: Path) -> None:
    add_user(config)
    opml = tmp_path / "big.opml"
    big_opml(opml, 1000)
    with serving(config, tmp_path / "serve.log") as base:
        poller = Poller(base, access_token(base, "alice", PASSWORD))
        poller.start()
        try:
            imported = subprocess.run(
                podsync_command(config, "opml", "import", "alice", str(opml)),
                capture_output=True,
                text=True,
                timeout=120,
            )
            polls_during_import = len(poller.statuses)
        finally:
            poller.stop.set()
            poller.join(timeout=30)
        assert imported.returncode == 0, imported.stderr
        assert imported.stdout.startswith("added: 1000\n")
        assert poller.failures == []
        assert polls_during_import > 0
        assert set(poller.statuses) == {200}
        status, page = request(base + "/api/v1/subscriptions?limit=500", token=poller.token)
        assert status == 200
        assert len(page["results"]) == 500


class Writer(threading.Thread):
    """Posts sync batches of 10 subscribes (one transaction each) until stopped."""

    def __init__(self, base: str, token: str) -> None:
        super().__init__(daemon=True)
        self.base, self.token = base, token
        self.stop = threading.Event()
        self.batches = 0
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            now = timestamps.format(timestamps.now_us())
            actions = [
                {
                    "action_id": str(uuid.uuid4()),
                    "type": "subscription",
                    "action": "subscribe",
                    "occurred_at": now,
                    "data": {"feed_url": f"https://w.example.com/{self.batches}/{i}"},
                }
                for i in range(10)
            ]
            status, body = request(self.base + "/api/v1/sync", {"requests": actions}, self.token)
            if status != 200:
                self.errors.append(f"{status}: {body}")
            self.batches += 1


def test_a_backup_taken_while_the_server_writes_is_whole(config: Config, tmp_path: Path) -> None:
    add_user(config)
    with serving(config, tmp_path / "serve.log") as base:
        writer = Writer(base, access_token(base, "alice", PASSWORD))
        writer.start()
        backups = []
        try:
            for n in range(3):
                while writer.batches < 5 * (n + 1):
                    writer.stop.wait(0.02)
                dest = tmp_path / f"backup-{n}.db"
                done = subprocess.run(
                    podsync_command(config, "db", "backup", str(dest)),
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                assert done.returncode == 0, done.stderr
                backups.append(dest)
            live = subprocess.run(
                podsync_command(config, "db", "check"), capture_output=True, text=True, timeout=60
            )
            assert live.returncode == 0, live.stderr
        finally:
            writer.stop.set()
            writer.join(timeout=30)
        assert writer.errors == []

    previous = 0
    for dest in backups:
        check_config = tmp_path / f"{dest.stem}.toml"
        check_config.write_text(f'[database]\npath = "{dest}"\n')
        checked = subprocess.run(
            [sys.executable, "-m", "podsync", "--config", str(check_config), "db", "check"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert checked.returncode == 0, checked.stderr
        assert "is ok" in checked.stdout
        with closing(sqlite3.connect(dest)) as conn:
            (subscriptions,) = conn.execute("SELECT count(*) FROM subscriptions").fetchone()
            users = conn.execute("SELECT name FROM users").fetchall()
            (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        assert users == [("alice",)]
        # Each batch is one transaction: a consistent copy holds whole batches only.
        assert subscriptions % 10 == 0
        assert subscriptions >= previous and subscriptions > 0
        previous = subscriptions
        assert mode == "delete"
        assert not Path(f"{dest}-wal").exists()
