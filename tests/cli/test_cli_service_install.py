"""The CLI beside a service install: it finds the service's configuration
(/etc/podsync/podsync.toml) when no other is named, and a working directory it may
not read (`sudo -u podsync podsync ...` from /root) is no reason to fail.

The real podsync CLI runs as root and as an unprivileged user (setpriv). The
service's configuration is written into /etc through an overlay mounted in a
mount namespace of the command's own (unshare): the command reads the real path,
and the real /etc is never written. In that namespace this Python's site-packages
(and podsync's source, for an editable install) are also mounted under a directory
every user can reach: the clone may be where only root can look (/root, or a home
of mode 0700), and the unprivileged user must still find podsync's code.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

import podsync
from podsync.config import load_config_and_origin
from podsync.config.locations import SYSTEM_CONFIG_FILE

# The interpreter itself (not the virtualenv's link to it): it must be one every
# user may run, as /usr/bin/python3 is.
PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
SITE_PACKAGES = Path(aiohttp.__file__).resolve().parent.parent
SOURCE = Path(podsync.__file__).resolve().parent
PASSWORD = "correct horse battery staple"
SERVICE_UID = 65534  # "nobody": the service's user here, in the group of its config


def _cannot_run_reason() -> str | None:
    if os.geteuid() != 0:
        return "runs podsync as another user and mounts an overlay on /etc: needs root"
    for tool in ("setpriv", "unshare"):
        if shutil.which(tool) is None:
            return f"needs {tool} (util-linux)"
    return None


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory every user can reach (pytest's tmp_path is root's alone), with
    the mount points of the code under it."""
    reason = _cannot_run_reason()
    if reason:
        pytest.skip(reason)
    path = Path(tempfile.mkdtemp(prefix="podsync-service-"))
    path.chmod(0o755)
    for mount_point in ("code/site", "code/source/podsync"):
        (path / mount_point).mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _home(scratch: Path, name: str, uid: int) -> Path:
    home = scratch / name
    home.mkdir(mode=0o700)
    os.chown(home, uid, uid)
    return home


def _unreadable(scratch: Path) -> Path:
    """Like /root for another user: there is a podsync.toml in it, unreadable."""
    path = scratch / "root-home"
    path.mkdir()
    (path / "podsync.toml").write_text("[server]\nport = 1\n")
    path.chmod(0o000)
    return path


Run = Callable[..., subprocess.CompletedProcess[str]]


def _runner(scratch: Path, etc: Path | None = None) -> Run:
    """`podsync ARGS` as `uid` (root: 0) with `home`, in `cwd`, in a mount namespace
    with the code under `scratch/code`; under /etc with etc's contents laid over it
    when `etc` is given."""
    code = scratch / "code"
    mounts = [f"mount --bind {shlex.quote(str(SITE_PACKAGES))} {shlex.quote(str(code / 'site'))}"]
    path = [code / "site"]
    if not SOURCE.is_relative_to(SITE_PACKAGES):  # an editable install
        target = code / "source" / "podsync"
        mounts.append(f"mount --bind {shlex.quote(str(SOURCE))} {shlex.quote(str(target))}")
        path.insert(0, target.parent)
    if etc is not None:
        work = scratch / "overlay-work"
        work.mkdir(exist_ok=True)
        layers = shlex.quote(f"lowerdir=/etc,upperdir={etc},workdir={work}")
        mounts.append(f"mount -t overlay overlay -o {layers} /etc")
    script = " && ".join(mounts) + ' && exec "$@"'

    def run(
        *args: str, uid: int, home: Path, cwd: Path, stdin: str = ""
    ) -> subprocess.CompletedProcess[str]:
        # -P: nothing from the working directory on sys.path.
        command = [PYTHON, "-P", "-m", "podsync", *args]
        if uid != 0:
            command = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *command]
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                   *command]  # fmt: skip
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "PYTHONPATH": os.pathsep.join(str(p) for p in path),
        }
        return subprocess.run(
            command, cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip

    return run


def test_an_unreadable_working_directory_is_ignored(scratch: Path) -> None:
    """`sudo -u podsync podsync db check` from /root: no config is read from there,
    and every command works on the user's own database."""
    home = _home(scratch, "home", SERVICE_UID)
    cwd = _unreadable(scratch)
    run = _runner(scratch)
    added = run("user", "add", "alice", "--password-stdin", uid=SERVICE_UID, home=home,
                cwd=cwd, stdin=PASSWORD + "\n")  # fmt: skip
    assert added.returncode == 0, added.stderr
    database = home / ".local" / "share" / "podsync" / "podsync.db"
    assert added.stderr.strip() == f"created database at {database}"
    for command in (["user", "list"], ["db", "check"], ["config", "show"], ["config", "check"]):
        done = run(*command, uid=SERVICE_UID, home=home, cwd=cwd)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    listed = run("user", "list", uid=SERVICE_UID, home=home, cwd=cwd)
    assert listed.stdout.splitlines()[1].split()[0] == "alice"
    # And a database missing there is the usual one line, not a traceback.
    other = _home(scratch, "other", SERVICE_UID)
    missing = run("db", "check", uid=SERVICE_UID, home=other, cwd=cwd)
    assert missing.returncode == 1
    assert missing.stderr.splitlines() == [
        f"Error: no database at {other}/.local/share/podsync/podsync.db "
        "(check --config or PODSYNC_CONFIG)"
    ]


def _service_config(scratch: Path) -> tuple[Path, Path]:
    """The overlay's upper directory with podsync/podsync.toml as the install docs
    lay it out (root:podsync 0750 and 0640), and the service's state directory."""
    state = scratch / "var-lib-podsync"
    state.mkdir(mode=0o750)
    os.chown(state, SERVICE_UID, SERVICE_UID)
    etc = scratch / "etc"
    (etc / "podsync").mkdir(parents=True)
    config = etc / "podsync" / "podsync.toml"
    config.write_text(f'[database]\npath = "{state}/podsync.db"\n')
    os.chown(etc / "podsync", 0, SERVICE_UID)
    os.chown(config, 0, SERVICE_UID)
    (etc / "podsync").chmod(0o750)
    config.chmod(0o640)
    return etc, state


def test_admin_commands_use_the_service_configuration(scratch: Path) -> None:
    """`sudo podsync user add alice` without --config beside a service: the service's
    database, never a second one in root's home."""
    etc, state = _service_config(scratch)
    run = _runner(scratch, etc)
    root_home = _home(scratch, "root", 0)
    service_home = _home(scratch, "service-home", SERVICE_UID)
    # Before the service ever ran, root would make a database the service cannot open.
    early = run("user", "add", "alice", "--password-stdin", uid=0, home=root_home,
                cwd=scratch, stdin=PASSWORD + "\n")  # fmt: skip
    assert early.returncode == 1
    assert early.stderr.splitlines() == [
        f"Error: no database at {state}/podsync.db, and root would make one in {state}, "
        f"which belongs to nobody: run this as that user (sudo -u nobody podsync ...), "
        "or start the service first"
    ]
    assert list(state.iterdir()) == [] and not (root_home / ".local").exists()
    # The service's user makes the database, as `systemctl start podsync` would.
    first = run("db", "migrate", uid=SERVICE_UID, home=service_home, cwd=_unreadable(scratch))
    assert first.returncode == 0, first.stderr
    assert f"created database at {state}/podsync.db" in first.stderr

    added = run("user", "add", "alice", "--password-stdin", uid=0, home=root_home,
                cwd=scratch, stdin=PASSWORD + "\n")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "created database" not in added.stderr
    assert not (root_home / ".local").exists()
    shown = run("config", "show", uid=0, home=root_home, cwd=scratch)
    assert f"{SYSTEM_CONFIG_FILE}" in shown.stdout
    assert f'path = "{state}/podsync.db"' in shown.stdout

    # The service's user, from root's unreadable home, sees alice.
    listed = run("user", "list", uid=SERVICE_UID, home=service_home, cwd=scratch / "root-home")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split()[0] == "alice"
    assert not (service_home / ".local").exists()

    # --config, PODSYNC_CONFIG and ./podsync.toml still come first.
    mine = scratch / "mine"
    mine.mkdir()
    (mine / "podsync.toml").write_text('[database]\npath = "own.db"\n')
    own = run("user", "add", "bob", "--password-stdin", uid=0, home=root_home, cwd=mine,
              stdin=PASSWORD + "\n")  # fmt: skip
    assert own.stderr.strip() == f"created database at {mine}/own.db"


def test_a_service_configuration_the_user_may_not_read_is_named(scratch: Path) -> None:
    """A user who can see the file but not read it is told so, with what to do; a
    user who cannot even see it (/etc/podsync is 0750) gets the defaults."""
    etc, _ = _service_config(scratch)
    run = _runner(scratch, etc)
    (etc / "podsync").chmod(0o755)
    stranger = _home(scratch, "stranger", SERVICE_UID - 1)
    refused = run("user", "list", uid=SERVICE_UID - 1, home=stranger, cwd=scratch)
    assert refused.returncode == 1
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"Error: configuration: config file {SYSTEM_CONFIG_FILE} cannot be read")
    assert "sudo -u podsync" in line
    assert not (stranger / ".local").exists()

    (etc / "podsync").chmod(0o750)
    own = run("user", "add", "carol", "--password-stdin", uid=SERVICE_UID - 1, home=stranger,
              cwd=scratch, stdin=PASSWORD + "\n")  # fmt: skip
    assert own.returncode == 0, own.stderr
    assert own.stderr.strip() == (f"created database at {stranger}/.local/share/podsync/podsync.db")


def test_the_search_order_ends_with_the_service_configuration(tmp_path: Path) -> None:
    system = tmp_path / "etc" / "podsync.toml"
    system.parent.mkdir()
    system.write_text("[server]\nport = 9001\n")
    cwd = tmp_path / "cwd"
    cwd.mkdir()

    def port(environ: dict[str, str], path: str | None = None) -> tuple[int, str]:
        config, origin = load_config_and_origin(path, environ, cwd, system_config=system)
        return config.server.port, origin.file

    assert port({}) == (9001, str(system))
    (cwd / "podsync.toml").write_text("[server]\nport = 9002\n")
    assert port({}) == (9002, str(cwd / "podsync.toml"))
    (tmp_path / "env.toml").write_text("[server]\nport = 9003\n")
    assert port({"PODSYNC_CONFIG": str(tmp_path / "env.toml")})[0] == 9003
    (tmp_path / "arg.toml").write_text("[server]\nport = 9004\n")
    assert port({}, str(tmp_path / "arg.toml"))[0] == 9004
    (cwd / "podsync.toml").unlink()
    system.unlink()
    assert port({}) == (8080, "")
