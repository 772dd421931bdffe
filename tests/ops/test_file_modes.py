"""Every file podsync creates is readable by its owner only (issue 10 item 4):
the database and its -wal/-shm, backups, OPML exports, whatever the umask. Before,
under umask 022 they were 0644, and a backup read by another local user gave the
token-signing secret. Also `opml export -o` (item 14): no silent overwrite, and no
partial file left behind on a full disk."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from podsync.config import Config
from podsync.storage.sqlite import Database
from tests.support.cli_support import add_user, run
from tests.support.fs_conditions import fill, small_disk


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_the_database_and_its_wal_and_shm_are_0600(config: Config, usual_umask: None) -> None:
    path = config.database.path

    async def write_and_look() -> dict[str, int]:
        async with Database(path) as db:
            async with db.write() as conn:
                await conn.execute("UPDATE meta SET value = value")
            # While open, the -wal and -shm exist.
            return {suffix: mode(path + suffix) for suffix in ("", "-wal", "-shm")}

    assert asyncio.run(write_and_look()) == {"": 0o600, "-wal": 0o600, "-shm": 0o600}


def test_an_existing_database_open_to_others_is_restricted(
    config: Config, usual_umask: None
) -> None:
    add_user(config)
    os.chmod(config.database.path, 0o644)
    assert run(config, "user", "list").exit_code == 0
    assert mode(config.database.path) == 0o600


def test_backups_and_exports_are_0600(config: Config, tmp_path: Path, usual_umask: None) -> None:
    add_user(config)
    backup = tmp_path / "backup.db"
    assert run(config, "db", "backup", str(backup)).exit_code == 0
    assert mode(backup) == 0o600
    export = tmp_path / "alice.opml"
    assert run(config, "opml", "export", "alice", "-o", str(export)).exit_code == 0
    assert mode(export) == 0o600


def test_export_refuses_an_existing_file_unless_forced(config: Config, tmp_path: Path) -> None:
    add_user(config)
    out = tmp_path / "alice.opml"
    out.write_text("keep me")
    refused = run(config, "opml", "export", "alice", "-o", str(out))
    assert refused.exit_code == 1
    assert refused.stderr == f"Error: {out} already exists; add --force to overwrite it\n"
    assert out.read_text() == "keep me"
    forced = run(config, "opml", "export", "alice", "-o", str(out), "--force")
    assert forced.exit_code == 0, forced.output
    assert out.read_bytes().startswith(b"<?xml")


def test_export_onto_a_full_disk_leaves_no_file_behind(config: Config, tmp_path: Path) -> None:
    add_user(config)
    feeds = "".join(
        f'<outline type="rss" text="feed {i}" xmlUrl="https://feeds.example/{i}/{"x" * 200}"/>'
        for i in range(300)
    )
    source = tmp_path / "many.opml"
    source.write_text(f'<?xml version="1.0"?><opml version="2.0"><body>{feeds}</body></opml>')
    assert run(config, "opml", "import", "alice", str(source)).exit_code == 0
    with small_disk(tmp_path / "disk", size="64k") as disk:
        fill(disk)
        out = disk / "x.opml"
        result = run(config, "opml", "export", "alice", "-o", str(out))
        assert result.exit_code == 1
        assert result.stderr == f"Error: cannot write {out}: No space left on device\n"
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]
