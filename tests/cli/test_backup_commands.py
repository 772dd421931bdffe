"""docs/operations.md's backup, check and restore lines for the README's install,
run by bash as written, as a person with an empty HOME and podsync on the PATH
(the `podsync` command of this Python's environment): the backup lands in
~/podsync-backups and checks ok; the restore brings the database back to it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PASSWORD

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
PODSYNC = Path(sys.executable).parent / "podsync"
MARK = "With the README's install"


def _blocks() -> tuple[str, str]:
    """The shell blocks that follow each "With the README's install": backup, restore."""
    parts = OPERATIONS.read_text().split("## Backups", 1)[1].split("\n## ", 1)[0].split(MARK)
    backup, restore = (part.split("```sh\n", 1)[1].split("```", 1)[0] for part in parts[1:3])
    return backup, restore


def test_the_readme_install_s_backup_check_and_restore_work_as_written(tmp_path: Path) -> None:
    if not PODSYNC.exists():
        pytest.skip(f"no podsync command beside {sys.executable} (pip install .)")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": f"{PODSYNC.parent}{os.pathsep}/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
    }

    def shell(script: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script], cwd=home, env=env, input=stdin,
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{script}\n{done.stdout}\n{done.stderr}"
        return done

    database = home / ".local" / "share" / "podsync" / "podsync.db"
    shell("podsync user add alice --password-stdin", stdin=PASSWORD + "\n")
    assert database.exists()
    backup_lines, restore_lines = _blocks()

    backed_up = shell(backup_lines)
    [backup] = (home / "podsync-backups").glob("podsync-*.db")
    assert f"backup of {database} written to {backup}" in backed_up.stdout
    assert f"database {backup} is ok" in backed_up.stdout
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(backup.parent.stat().st_mode) == 0o700

    shell("podsync user add bob --password-stdin", stdin=PASSWORD + "\n")
    assert "podsync-2026-11-22.db" in restore_lines  # the example's name, put in below
    restored = shell(restore_lines.replace("podsync-2026-11-22.db", backup.name))
    assert f"database {database} is ok" in restored.stdout
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    listed = shell("podsync user list").stdout.splitlines()
    assert [line.split()[0] for line in listed[1:]] == ["alice"]
