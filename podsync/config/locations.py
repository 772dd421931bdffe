"""Where podsync looks for its configuration file, and keeps its data when the
configuration does not say: places that do not depend on the working directory, so
that `podsync user add` run anywhere finds the configuration and the database
`podsync serve` uses (the XDG base directories, as the data already did)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DATABASE_FILE = "podsync.db"
CONFIG_FILE = "podsync.toml"
# The configuration of podsync installed as a service (packaging/podsync.service):
# read when no other file is named, so that an admin command finds the service's
# database instead of making one of its own.
SYSTEM_CONFIG_FILE = Path("/etc/podsync/podsync.toml")


def is_file(path: Path) -> bool:
    """Whether `path` is a file; False too where it cannot be looked at (a directory
    this user may not read, as /root is for `sudo -u podsync podsync ...`)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _xdg_home(environ: Mapping[str, str], variable: str, *default: str) -> Path:
    """$variable (ignored when relative, as the XDG spec says), else ~/default."""
    chosen = environ.get(variable, "")
    if not os.path.isabs(chosen):
        home = environ.get("HOME") or os.path.expanduser("~")
        chosen = os.path.join(home, *default)
    return Path(chosen)


def config_file_places(
    environ: Mapping[str, str], cwd: Path, system_config: Path | None
) -> tuple[Path, ...]:
    """Where a configuration file is looked for when none is named (neither
    --config nor $PODSYNC_CONFIG), in order; the first that exists is read:
    ./podsync.toml, $XDG_CONFIG_HOME/podsync/podsync.toml (~/.config/podsync/...),
    the service's /etc/podsync/podsync.toml (`system_config`; None: none)."""
    user = _xdg_home(environ, "XDG_CONFIG_HOME", ".config") / "podsync" / CONFIG_FILE
    places = [cwd / CONFIG_FILE, user]
    if system_config is not None:
        places.append(system_config)
    return tuple(places)


def _state_directory(environ: Mapping[str, str]) -> str:
    return environ.get("STATE_DIRECTORY", "").split(":")[0]


def default_data_directory(environ: Mapping[str, str]) -> Path:
    """Where podsync keeps its database unless told otherwise, whatever the working
    directory: systemd's $STATE_DIRECTORY (the first, when the unit names several),
    else $XDG_DATA_HOME/podsync (ignored when relative, as the XDG spec says), else
    ~/.local/share/podsync."""
    state = _state_directory(environ)
    if state:
        return Path(state)
    return _xdg_home(environ, "XDG_DATA_HOME", ".local", "share") / "podsync"


def default_database_path(environ: Mapping[str, str], cwd: Path) -> tuple[str, tuple[str, ...]]:
    """The database path when none is configured, and notes for the person: one when
    it is an old ./podsync.db (the default of earlier releases, still used)."""
    standard = default_data_directory(environ) / DATABASE_FILE
    legacy = cwd / DATABASE_FILE
    if not _state_directory(environ) and is_file(legacy) and legacy != standard:
        note = (
            f"using {legacy}: a podsync.db in the working directory (where earlier "
            f"releases kept it). Commands run elsewhere use {standard} instead: stop "
            f"the server and move it there with its -wal and -shm files, or set "
            f"database.path"
        )
        return str(legacy), (note,)
    return str(standard), ()
