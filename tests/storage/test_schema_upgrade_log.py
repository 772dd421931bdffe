"""A start that upgrades the schema says so once, with the versions and the time it
took ("upgraded the database from schema 15 to 23 in 0.4 s"): on both engines, from
a database of the 0.2.0 release (schema 15); a start with nothing to upgrade, and a
new database, say nothing of it."""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path

import pytest

from podsync.config import Config
from podsync.storage.engine import create_engine
from podsync.storage.migrations import sqlite as sqlite_migrations
from tests.support.cli_support import config_path
from tests.support.migration_support import add_user, database_at
from tests.support.server_process import start_listening

RELEASE_0_2_0 = 15  # the schema version the 0.2.0 release left
UPGRADED = re.compile(r"upgraded the database from schema (\d+) to (\d+) in (\d+\.\d) s")


@pytest.mark.both_engines
async def test_an_upgrade_is_logged_once_with_its_versions_and_time(
    config: Config, db_engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with database_at(config, db_engine, RELEASE_0_2_0) as old:
        await add_user(old, "alice")
    caplog.set_level(logging.INFO, logger="podsync.db")
    for _ in range(2):  # the second start finds nothing to do
        db = create_engine(config.database)
        await db.open()
        await db.close()
    said = [m for r in caplog.records if (m := UPGRADED.fullmatch(r.getMessage()))]
    assert len(said) == 1, caplog.text
    latest = len(sqlite_migrations.MIGRATIONS)
    assert (int(said[0].group(1)), int(said[0].group(2))) == (RELEASE_0_2_0, latest)


@pytest.mark.both_engines
async def test_a_new_database_says_nothing_of_an_upgrade(
    config: Config, db_engine: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="podsync.db")
    db = create_engine(config.database)
    await db.open()
    await db.close()
    assert not UPGRADED.search(caplog.text)


async def test_serve_on_a_database_of_the_release_before_logs_the_upgrade(
    config: Config, tmp_path: Path
) -> None:
    """The real `podsync serve`, SQLite: its log has the line once, before it listens."""
    assert not config.database.url
    async with database_at(config, "sqlite", RELEASE_0_2_0) as old:
        await add_user(old, "alice")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
    log = tmp_path / "serve.log"
    argv = [sys.executable, "-m", "podsync", "--config", config_path(config), "serve"]
    proc, _ = start_listening([*argv, "--port", "0"], log, env)
    try:
        said = UPGRADED.findall(log.read_text())
        assert said and len(said) == 1, log.read_text()
        assert said[0][:2] == (str(RELEASE_0_2_0), str(len(sqlite_migrations.MIGRATIONS)))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
