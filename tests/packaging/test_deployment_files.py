"""packaging/podsync.service and packaging/podsync.toml fit together and load."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

from podsync.config import load_config

PACKAGING = Path(__file__).resolve().parents[2] / "packaging"


def read_unit() -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    unit.read_string((PACKAGING / "podsync.service").read_text())
    return unit


def test_the_deployment_config_loads_and_keeps_the_database_in_the_state_directory() -> None:
    config = load_config(PACKAGING / "podsync.toml", environ={})
    service = read_unit()["Service"]
    state_dir = Path("/var/lib") / service["StateDirectory"]
    assert Path(config.database.path) == state_dir / "podsync.db"
    assert service["WorkingDirectory"] == str(state_dir)
    assert str(state_dir) in service["ReadWritePaths"].split()
    # Behind a proxy on the same machine: loopback only, and its X-Forwarded-For believed.
    assert config.server.host == "127.0.0.1"
    assert set(config.server.trusted_proxies) == {"127.0.0.1", "::1"}


def test_the_unit_runs_the_installed_binary_with_the_expected_config_unprivileged() -> None:
    service = read_unit()["Service"]
    assert shlex.split(service["ExecStart"]) == [
        "/usr/local/bin/podsync",
        "--config",
        "/etc/podsync/podsync.toml",
        "serve",
    ]
    assert service["User"] == "podsync"
    for key, value in {
        "Type": "exec",
        "KillSignal": "SIGTERM",
        # The main process stops its workers (server.workers) and each finishes its
        # requests; a reload reaches the main process, which reloads them all.
        "KillMode": "mixed",
        "ExecReload": "/bin/kill -HUP $MAINPID",
        "Restart": "on-failure",
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
    }.items():
        assert service[key] == value, key
    assert read_unit()["Install"]["WantedBy"] == "multi-user.target"
