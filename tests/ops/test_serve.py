"""Contract section 9: `podsync serve` as a real process, and `--version`."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from podsync import __version__
from podsync.config import Config
from podsync.storage.migrations.sqlite import MIGRATIONS
from tests.conftest import PASSWORD, ServeProcess, config_file, run_cli


def _get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.load(exc)


def _post(url: str, body: dict[str, str]) -> tuple[int, Any]:
    request = urllib.request.Request(  # noqa: S310
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.load(exc)


def _podsync(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
    return subprocess.run(
        [sys.executable, "-m", "podsync", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_answers_and_stops_cleanly_on_a_signal(
    config: Config, serve_process: Callable[..., ServeProcess], sig: int
) -> None:
    added = run_cli(config, "user", "add", "alice", "--password-stdin", input=PASSWORD + "\n")
    assert added.exit_code == 0
    server = serve_process(config)
    assert (
        f"podsync {__version__} listening on {server.url} "
        f"(database {config.database.path}; config {config_file(config)})"
    ) in (server.output())
    assert _get(server.url + "/healthz") == (200, {"status": "ok", "version": __version__})
    status, tokens = _post(server.url + "/auth/login", {"username": "alice", "password": PASSWORD})
    assert status == 200
    assert set(tokens) >= {"access_token", "refresh_token"}
    assert server.stop(sig) == 0
    output = server.output()
    assert "shutting down" in output
    assert output.rstrip().endswith("stopped")
    assert "Traceback" not in output
    # Every connection was closed: SQLite checkpointed and removed the WAL file.
    assert not Path(config.database.path + "-wal").exists()
    with closing(sqlite3.connect(config.database.path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        assert conn.execute("SELECT count(*) FROM refresh_tokens").fetchone() == (1,)


def test_serve_without_a_config_uses_the_default_data_directory(
    tmp_path: Path, serve_process: Callable[..., ServeProcess]
) -> None:
    server = serve_process(env={"XDG_DATA_HOME": str(tmp_path / "data")})
    assert server.url.startswith("http://127.0.0.1:")
    # Not the working directory (tmp_path): the user's data directory; no config file.
    database = tmp_path / "data" / "podsync" / "podsync.db"
    assert f"(database {database}; config none, built-in defaults)" in server.output()
    assert f"created database at {database}" in server.output()
    assert _get(server.url + "/healthz")[0] == 200
    assert database.is_file()
    assert not (tmp_path / "podsync.db").exists()
    assert server.stop() == 0


def test_access_log_lines_and_switching_them_off(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> None:
    server = serve_process(config)
    _get(server.url + "/healthz?x=1")
    assert server.stop() == 0
    assert '127.0.0.1 "GET /healthz" 200' in server.output()
    quiet = serve_process(config, env={"PODSYNC_LOG_ACCESS_LOG": "false"})
    _get(quiet.url + "/healthz")
    assert quiet.stop() == 0
    assert "/healthz" not in quiet.output()


def test_serve_on_a_busy_port_is_one_error_line(config: Config, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _podsync(
            "--config", str(config_file(config)), "serve", "--port", str(port), cwd=tmp_path
        )
    assert result.returncode == 1
    # One line that says what is wrong, what may hold the port and what to do.
    assert result.stderr.splitlines()[-1] == (
        f"Error: cannot listen on 127.0.0.1:{port}: the address is already in use (is "
        "another podsync running?); choose another port with --port or server.port"
    )
    assert "Traceback" not in result.stderr
    assert "Errno" not in result.stderr


def test_serve_refuses_a_newer_schema(config: Config, tmp_path: Path) -> None:
    with closing(sqlite3.connect(config.database.path)) as conn:
        conn.execute("PRAGMA user_version = 99")
    result = _podsync("--config", str(config_file(config)), "serve", "--port", "0", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith("Error: database schema version 99")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args", [["--port", "70000"], ["--port", "x"], ["--nope"], ["--workers", "0"]]
)
def test_serve_usage_errors_exit_2(config: Config, args: list[str]) -> None:
    result = run_cli(config, "serve", *args)
    assert result.exit_code == 2
    assert "Usage:" in result.stderr


def test_version(tmp_path: Path) -> None:
    assert run_cli(None, "--version").stdout == f"podsync {__version__}\n"
    result = _podsync("--version", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, f"podsync {__version__}\n")
    installed = Path(sys.executable).parent / "podsync"
    if installed.exists():
        result = subprocess.run(
            [installed, "--version"], capture_output=True, text=True, check=False, timeout=30
        )
        assert (result.returncode, result.stdout) == (0, f"podsync {__version__}\n")
