"""Every command block of docs/operations.md, read from the page itself, runs as
pasted. The blocks for the README's install run in the page's order, by bash, as a
person with an empty HOME and podsync on the PATH (the `podsync` command of this
Python's environment), with what a person does between them: a first user before,
a change after the backup (which the restore takes back), the app's OPML export in
~/Downloads. The blocks for a service install (`sudo`, systemd, the `podsync`
user) are checked by bash for syntax, and their restore reads the directory their
backup writes."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PASSWORD
from tests.opa.test_opml_parse import FIXTURES

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
PODSYNC = Path(sys.executable).parent / "podsync"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def command_blocks() -> list[str]:
    """The page's shell blocks, in order."""
    return [body for kind, body in FENCE.findall(OPERATIONS.read_text()) if kind == "sh"]


def is_the_service_s(block: str) -> bool:
    return "sudo" in block


def test_the_page_has_command_blocks_of_both_installs() -> None:
    blocks = command_blocks()
    assert len([b for b in blocks if is_the_service_s(b)]) >= 2
    assert len([b for b in blocks if not is_the_service_s(b)]) >= 3


def test_the_service_install_s_blocks_parse_and_restore_what_the_backup_wrote() -> None:
    service = [b for b in command_blocks() if is_the_service_s(b)]
    for block in service:
        checked = subprocess.run(
            ["bash", "-n"], input=block, capture_output=True, text=True, check=False
        )
        assert checked.returncode == 0, f"{block}\n{checked.stderr}"
    [backup] = [b for b in service if " db backup " in b]
    [restore] = [b for b in service if "install -m 0600" in b]
    written = re.search(r"db backup (\S+)/podsync-\$\(date \+%F\)\.db", backup)
    assert written is not None, backup
    assert f"find {written.group(1)} -name 'podsync-*.db'" in restore, restore


def test_the_readme_install_s_blocks_run_as_pasted_in_order(tmp_path: Path) -> None:
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
    (home / "Downloads").mkdir()
    shutil.copy(FIXTURES / "antennapod.opml", home / "Downloads" / "antennapod-feeds.opml")

    ran = []
    for block in command_blocks():
        if is_the_service_s(block):
            continue
        if "install -m 0600" in block:  # a change since the backup, for the restore to undo
            shell("podsync user add bob --password-stdin", stdin=PASSWORD + "\n")
        ran.append(shell(block))
    backed_up, restored, opml = ran

    [backup] = (home / "podsync-backups").glob("podsync-*.db")
    assert f"backup of {database} written to {backup}" in backed_up.stdout
    assert f"database {backup} is ok" in backed_up.stdout
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(backup.parent.stat().st_mode) == 0o700

    assert f"database {database} is ok" in restored.stdout
    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    listed = shell("podsync user list").stdout.splitlines()
    assert [line.split()[0] for line in listed[1:]] == ["alice"]

    assert "added" in opml.stdout
    assert (home / "alice.opml").read_text().count('type="rss"') > 0
