"""Contract section 9 (rev. 2): only `serve`, `user add` and `db migrate` create a
missing database, and say so; every other command exits 1 and creates nothing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from podsync.cli import cli
from podsync.config import Config
from tests.conftest import PASSWORD, ServeProcess, run_cli

NOT_CREATING = [
    ["user", "list"],
    ["user", "list", "--json"],
    ["user", "passwd", "alice", "--password-stdin"],
    ["user", "disable", "alice"],
    ["user", "enable", "alice"],
    ["user", "logout", "alice"],
    ["user", "delete", "alice", "--yes"],
    ["opml", "export", "alice"],
    ["opml", "import", "alice", "-"],
    ["db", "backup", "copy.db"],
    ["db", "check"],
]
OPML = '<opml version="2.0"><body><outline xmlUrl="https://e.org/f"/></body></opml>'


def _files(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


@pytest.mark.parametrize("args", NOT_CREATING, ids=" ".join)
def test_a_command_on_a_missing_database_fails_and_creates_nothing(
    config: Config, tmp_path: Path, args: list[str]
) -> None:
    before = _files(tmp_path)
    result = run_cli(config, *args, input=f"{PASSWORD}\n" if "-" not in args else OPML)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: no database at {config.database.path} (check --config or PODSYNC_CONFIG)\n"
    )
    assert _files(tmp_path) == before


def test_a_typo_in_the_environment_names_the_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        cli, ["opml", "export", "alice"], env={"PODSYNC_DATABASE_PATH": "podsycn.db"}
    )
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: no database at {tmp_path / 'podsycn.db'} (check --config or PODSYNC_CONFIG)\n"
    )
    assert not (tmp_path / "podsycn.db").exists()


def test_user_add_and_db_migrate_create_it_and_say_so_once(config: Config) -> None:
    created = f"created database at {config.database.path}\n"
    added = run_cli(config, "user", "add", "alice", "--password-stdin", input=PASSWORD + "\n")
    assert (added.exit_code, added.stdout, added.stderr) == (0, "user alice created\n", created)
    again = run_cli(config, "user", "add", "bob", "--password-stdin", input=PASSWORD + "\n")
    assert (again.exit_code, again.stderr) == (0, "")
    os.remove(config.database.path)
    migrated = run_cli(config, "db", "migrate")
    assert (migrated.exit_code, migrated.stderr) == (0, created)
    assert run_cli(config, "db", "migrate").stderr == ""
    # And now every other command works on it.
    assert run_cli(config, "user", "list").exit_code == 0
    assert run_cli(config, "db", "check").exit_code == 0


def test_a_refused_user_add_creates_no_database(config: Config) -> None:
    result = run_cli(config, "user", "add", "alice", "--password-stdin", input="short\n")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and "created database" not in result.stderr
    assert not Path(config.database.path).exists()


def test_serve_creates_it_and_logs_so(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> None:
    server = serve_process(config)
    assert server.stop() == 0
    assert server.output().count(f"created database at {config.database.path}") == 1
    assert Path(config.database.path).exists()
    server = serve_process(config)
    assert server.stop() == 0
    assert "created database" not in server.output()
