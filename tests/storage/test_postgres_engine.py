"""The PostgreSQL engine itself: migrations beside SQLite's, the `?` translation,
the SQLite-only commands, and the skip line when PostgreSQL is missing."""

from __future__ import annotations

import pytest

from podsync.config import Config
from podsync.errors import Unavailable
from podsync.storage.errors import redact
from podsync.storage.migrations.postgres import MIGRATIONS as POSTGRES_MIGRATIONS
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.storage.postgres import PostgresDatabase, translate
from podsync.store import meta
from tests.conftest import MakeConfig, run_cli
from tests.support.pg_cluster import Cluster


def test_every_migration_has_a_postgresql_step() -> None:
    # Adding a table means a step in both tuples: the versions must stay the same.
    assert len(POSTGRES_MIGRATIONS) == len(MIGRATIONS)


def test_placeholders_are_numbered_outside_string_literals() -> None:
    sql = "UPDATE t SET a = '?' || ?, b = ? WHERE c IN (?, ?)"
    assert translate(sql) == "UPDATE t SET a = '?' || $1, b = $2 WHERE c IN ($3, $4)"


def test_messages_never_show_the_password() -> None:
    assert redact("postgresql://app:s3cret@db:5432/podsync") == (
        "postgresql://app:<redacted>@db:5432/podsync"
    )


async def test_migrations_run_once_and_a_second_open_finds_them(pg_cluster: Cluster) -> None:
    url = pg_cluster.new_database()
    for _ in range(2):
        async with PostgresDatabase(url) as db, db.read() as conn:
            assert await meta.schema_version(conn) == len(POSTGRES_MIGRATIONS)
            # Each step ran once: the change counters are the users' own (step 19).
            assert await meta.get(conn, "change_seq") is None
            columns = await conn.fetch_all(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = 'users' "
                "AND column_name LIKE '%_seq' ORDER BY 1"
            )
            assert [c[0] for c in columns] == ["change_seq", "discovered_seq", "episode_seq"]


async def test_a_read_only_database_is_unavailable_not_an_error(pg_cluster: Cluster) -> None:
    # A standby or a read-only setting refuses writes with SQLSTATE 25006, as a
    # READ ONLY transaction does: the engine says 503 (contract rev. 2), as on SQLite.
    async with PostgresDatabase(pg_cluster.new_database()) as db:
        with pytest.raises(Unavailable) as refused:
            async with db.write() as conn:
                await conn.execute("SET TRANSACTION READ ONLY")
                await meta.touch(conn)
        assert refused.value.reason == "the database is read-only"
        assert db.write_failure is refused.value
        async with db.write() as conn:
            await meta.touch(conn)
        assert db.write_failure is None


def test_backup_and_check_name_the_postgresql_tools(
    make_config: MakeConfig, pg_cluster: Cluster
) -> None:
    config: Config = make_config(database={"url": pg_cluster.new_database()})
    backup = run_cli(config, "db", "backup", "/tmp/never-written.db")
    assert backup.exit_code == 1
    assert "pg_dump" in backup.output
    check = run_cli(config, "db", "check")
    assert check.exit_code == 1
    assert "amcheck" in check.output
    migrate = run_cli(config, "db", "migrate")
    assert migrate.exit_code == 0, migrate.output
    assert migrate.stdout.startswith("database PostgreSQL database "), migrate.stdout
    assert f"schema version {len(MIGRATIONS)}" in migrate.output
    assert config.database.path not in migrate.output  # the SQLite path is not in use
    assert "***" not in migrate.output or "password" not in migrate.output


@pytest.mark.parametrize("db_engine", ["postgresql"], indirect=True)
def test_the_cli_runs_on_postgresql(make_config: MakeConfig) -> None:
    config = make_config()
    assert config.database.url
    added = run_cli(config, "user", "add", "dave", "--password-stdin", input="pw-long-enough\n")
    assert added.exit_code == 0, added.output
    listed = run_cli(config, "user", "list")
    assert "dave" in listed.output
