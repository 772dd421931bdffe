"""`podsync db migrate|backup|check` (contract section 9)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from click.testing import CliRunner

from podsync.cli import cli
from podsync.config import Config
from podsync.storage.migrations.sqlite import MIGRATIONS
from tests.opa.test_opml_parse import FIXTURES
from tests.support.cli_support import add_user, run


def check(database: Path, tmp_path: Path) -> tuple[int, str, str]:
    toml = tmp_path / "check.toml"
    toml.write_text(f'[database]\npath = "{database}"\n')
    result = CliRunner().invoke(cli, ["--config", str(toml), "db", "check"])
    return result.exit_code, result.stdout, result.stderr


def test_migrate_creates_the_database_at_the_current_version(config: Config) -> None:
    result = run(config, "db", "migrate")
    assert result.exit_code == 0
    assert result.stdout.endswith(f"is at schema version {len(MIGRATIONS)}\n")
    assert Path(config.database.path).is_file()


def test_backup_copies_every_row_and_passes_the_check(config: Config, tmp_path: Path) -> None:
    add_user(config)
    run(config, "opml", "import", "alice", str(FIXTURES / "antennapod.opml"))
    dest = tmp_path / "copy.db"
    result = run(config, "db", "backup", str(dest))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"backup of {config.database.path} written to {dest} (")
    with closing(sqlite3.connect(dest)) as conn:
        assert conn.execute("SELECT count(*) FROM subscriptions").fetchone() == (4,)
    assert check(dest, tmp_path)[0] == 0


def test_backup_refuses_an_existing_dest_unless_forced(config: Config, tmp_path: Path) -> None:
    add_user(config)
    dest = tmp_path / "copy.db"
    dest.write_bytes(b"precious")
    result = run(config, "db", "backup", str(dest))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {dest} already exists; add --force to overwrite it\n"
    assert dest.read_bytes() == b"precious"
    forced = run(config, "db", "backup", str(dest), "--force")
    assert forced.exit_code == 0
    assert check(dest, tmp_path)[0] == 0


def test_backup_errors(config: Config, tmp_path: Path) -> None:
    add_user(config)
    missing_dir = run(config, "db", "backup", str(tmp_path / "nowhere" / "copy.db"))
    assert missing_dir.exit_code == 1
    assert "does not exist" in missing_dir.stderr
    itself = run(config, "db", "backup", config.database.path, "--force")
    assert itself.exit_code == 1
    assert "is the database itself" in itself.stderr
    assert check(Path(config.database.path), tmp_path)[0] == 0


def test_check_reports_a_healthy_database(config: Config, tmp_path: Path) -> None:
    add_user(config)
    code, out, _ = check(Path(config.database.path), tmp_path)
    assert code == 0
    assert out.endswith(f"is ok (schema version {len(MIGRATIONS)})\n")


def test_check_on_a_missing_file_fails_without_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    code, _, err = check(missing, tmp_path)
    assert (code, err) == (
        1,
        f"Error: no database at {missing} (check --config or PODSYNC_CONFIG)\n",
    )
    assert not missing.exists()


def test_check_on_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not SQLite " * 100)
    code, _, err = check(junk, tmp_path)
    assert code == 1
    assert "is damaged or not a database" in err


def test_check_finds_a_dangling_foreign_key(config: Config, tmp_path: Path) -> None:
    add_user(config)
    run(config, "opml", "import", "alice", str(FIXTURES / "castro.opml"))
    with closing(sqlite3.connect(config.database.path)) as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("DELETE FROM users")
        conn.commit()
    code, _, err = check(Path(config.database.path), tmp_path)
    assert code == 1
    assert "subscriptions row 1 refers to a missing users row" in err
    assert err.splitlines()[-1] == f"Error: database {config.database.path} is damaged"


def test_check_finds_a_damaged_index(config: Config, tmp_path: Path) -> None:
    add_user(config)
    run(config, "opml", "import", "alice", str(FIXTURES / "antennapod.opml"))
    copy = tmp_path / "damaged.db"
    assert run(config, "db", "backup", str(copy)).exit_code == 0
    with closing(sqlite3.connect(copy)) as conn:
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'subscriptions_url_key'"
        ).fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    # Overwrite the index's root page: the table rows are intact, the index is not.
    with copy.open("r+b") as raw:
        raw.seek((root - 1) * page_size)
        raw.write(b"\xff" * page_size)
    code, _, err = check(copy, tmp_path)
    assert code == 1
    assert "damaged" in err
