"""Where podsync finds its configuration file when none is named: ./podsync.toml,
then $XDG_CONFIG_HOME/podsync/podsync.toml (~/.config/podsync/podsync.toml), then the
service's /etc/podsync/podsync.toml; --config and $PODSYNC_CONFIG before all of
them. Each place is tried with the real `podsync` command on a scratch HOME, and
`podsync config show` names the file it read; `podsync serve` reads the same file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from podsync.config import load_config_and_origin
from tests.support.server_process import free_port, start_listening

HEADER = "# read from {}; a value's source follows it"


def _person(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A scratch HOME and a working directory outside it, and the environment of a
    person with nothing set but HOME and PATH."""
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    return home, cwd, env


def _file(path: Path, port: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[server]\nport = {port}\n")
    return path


def _show(cwd: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "podsync", *args, "config", "show"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_without_a_file_anywhere_config_show_says_where_it_looked(tmp_path: Path) -> None:
    home, cwd, env = _person(tmp_path)
    out = _show(cwd, env)
    looked = (
        f"{cwd / 'podsync.toml'}, {home / '.config' / 'podsync' / 'podsync.toml'}, "
        "/etc/podsync/podsync.toml"
    )
    assert f"# no config file (looked for {looked}), built-in defaults;" in out
    assert "port = 8080  # default" in out


def test_the_user_s_config_directory_is_read_from_any_working_directory(tmp_path: Path) -> None:
    home, cwd, env = _person(tmp_path)
    mine = _file(home / ".config" / "podsync" / "podsync.toml", 9101)
    out = _show(cwd, env)
    assert HEADER.format(mine) in out
    assert f"port = 9101  # {mine}" in out
    assert HEADER.format(mine) in _show(home, env)  # from HOME too
    # A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    assert HEADER.format(mine) in _show(cwd, {**env, "XDG_CONFIG_HOME": "elsewhere"})


def test_xdg_config_home_is_where_the_user_s_config_directory_is(tmp_path: Path) -> None:
    home, cwd, env = _person(tmp_path)
    _file(home / ".config" / "podsync" / "podsync.toml", 9101)
    chosen = _file(tmp_path / "xdg" / "podsync" / "podsync.toml", 9102)
    out = _show(cwd, {**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert HEADER.format(chosen) in out
    assert f"port = 9102  # {chosen}" in out


def test_a_podsync_toml_in_the_working_directory_comes_first(tmp_path: Path) -> None:
    home, cwd, env = _person(tmp_path)
    _file(home / ".config" / "podsync" / "podsync.toml", 9101)
    here = _file(cwd / "podsync.toml", 9103)
    assert HEADER.format(here) in _show(cwd, env)


def test_a_named_file_comes_before_every_place_looked_in(tmp_path: Path) -> None:
    home, cwd, env = _person(tmp_path)
    _file(home / ".config" / "podsync" / "podsync.toml", 9101)
    _file(cwd / "podsync.toml", 9103)
    named = _file(tmp_path / "named.toml", 9104)
    by_variable = _file(tmp_path / "by-variable.toml", 9105)
    assert HEADER.format(named) in _show(cwd, env, "--config", str(named))
    assert HEADER.format(by_variable) in _show(cwd, {**env, "PODSYNC_CONFIG": str(by_variable)})


def test_the_service_s_file_comes_after_the_user_s(tmp_path: Path) -> None:
    """/etc/podsync/podsync.toml is this machine's, not a test's: its place in the
    order is tried through load_config's stand-in for it."""
    home, cwd, env = _person(tmp_path)
    service = _file(tmp_path / "etc" / "podsync.toml", 9106)
    _, origin = load_config_and_origin(environ=env, cwd=cwd, system_config=service)
    assert origin.file == str(service)
    mine = _file(home / ".config" / "podsync" / "podsync.toml", 9101)
    config, origin = load_config_and_origin(environ=env, cwd=cwd, system_config=service)
    assert origin.file == str(mine) and config.server.port == 9101


def test_serve_reads_the_user_s_config_directory_and_names_it(tmp_path: Path) -> None:
    home, cwd, env = _person(tmp_path)
    port = free_port()
    mine = home / ".config" / "podsync" / "podsync.toml"
    mine.parent.mkdir(parents=True)
    mine.write_text(
        f"[server]\nport = {port}\n[feeds]\nfetch_metadata = false\n[log]\naccess_log = false\n"
    )
    proc, url = start_listening(
        [sys.executable, "-m", "podsync", "serve"], tmp_path / "serve.log", env, cwd=cwd
    )
    try:
        assert url == f"http://127.0.0.1:{port}"
        line = (tmp_path / "serve.log").read_text()
        assert f"config {mine})" in line
        assert (home / ".local" / "share" / "podsync" / "podsync.db").exists()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
