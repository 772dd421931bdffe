"""A first run as a new user does it, through real `podsync serve` processes and the
real CLI in subprocesses: one default data location whatever the working directory
($XDG_DATA_HOME/podsync, ~/.local/share/podsync, $STATE_DIRECTORY under systemd), an
old ./podsync.db still used with a note, --config after the command name, and the
page at / saying when a phone cannot reach the address it shows."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import PASSWORD
from tests.support.server_process import start_listening


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without podsync's or XDG's variables, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PODSYNC_", "XDG_")) and k != "STATE_DIRECTORY"
    }
    env.update(extra)
    return env


def podsync(
    cwd: Path, env: dict[str, str], *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "podsync", *args],
        cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    log: Path
    url: str

    def output(self) -> str:
        return self.log.read_text(errors="replace")


Serve = Callable[..., Served]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    started: list[Served] = []

    def start(cwd: Path, env: dict[str, str], *args: str) -> Served:
        log = tmp_path / f"serve-{len(started)}.log"
        argv = [sys.executable, "-m", "podsync", *args]
        proc, url = start_listening(argv, log, env, cwd)
        started.append(Served(proc, log, url))
        return started[-1]

    yield start
    for served in started:
        if served.proc.poll() is None:
            served.proc.send_signal(signal.SIGTERM)
            served.proc.wait(timeout=30)


def get(url: str, **headers: str) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode(errors="replace")


def login(base: str, name: str) -> int:
    body = f'{{"username": "{name}", "password": "{PASSWORD}"}}'.encode()
    request = urllib.request.Request(  # noqa: S310 - loopback
        base + "/auth/login", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            return answer.status
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code


def dirs(tmp_path: Path, *names: str) -> list[Path]:
    made = []
    for name in names:
        (tmp_path / name).mkdir()
        made.append(tmp_path / name)
    return made


# --- one default data location ---


def test_user_add_from_another_directory_finds_the_servers_database(
    tmp_path: Path, serve: Serve
) -> None:
    """The bug a new user met: `serve` in one directory and `user add` in another
    made two databases, and the login then failed."""
    here, elsewhere, data = dirs(tmp_path, "here", "elsewhere", "data")
    env = clean_env(XDG_DATA_HOME=str(data), HOME=str(tmp_path / "home"))
    server = serve(here, env, "serve", "--port", "0")
    expected = data / "podsync" / "podsync.db"
    assert f"created database at {expected}" in server.output()
    assert f"(database {expected};" in server.output()

    added = podsync(elsewhere, env, "user", "add", "alice", "--password-stdin", stdin=PASSWORD)
    assert added.returncode == 0, added.stderr
    assert "created database" not in added.stderr  # the same file, not a second one
    assert login(server.url, "alice") == 200
    assert not list(here.iterdir()) and not list(elsewhere.iterdir())
    # Made owner-only, with the directory podsync created for it.
    assert stat.S_IMODE(expected.stat().st_mode) == 0o600
    assert stat.S_IMODE(expected.parent.stat().st_mode) == 0o700

    listed = podsync(tmp_path, env, "user", "list")
    assert listed.returncode == 0 and "alice" in listed.stdout


def test_without_xdg_data_home_it_is_under_the_home_directory(tmp_path: Path) -> None:
    [home] = dirs(tmp_path, "home")
    env = clean_env(HOME=str(home))
    # On a fresh account the directory is not there yet: made with the database.
    checked = podsync(tmp_path, env, "config", "check")
    assert checked.returncode == 0, checked.stderr
    assert not (home / ".local").exists()
    added = podsync(tmp_path, env, "user", "add", "alice", "--password-stdin", stdin=PASSWORD)
    assert added.returncode == 0, added.stderr
    expected = home / ".local" / "share" / "podsync" / "podsync.db"
    assert added.stderr.strip() == f"created database at {expected}"
    shown = podsync(tmp_path, env, "config", "show")
    assert f'path = "{expected}"  # default' in shown.stdout


def test_under_systemd_it_is_the_state_directory(tmp_path: Path) -> None:
    state, data = dirs(tmp_path, "state", "data")
    # systemd passes every StateDirectory=, colon-separated: the first is podsync's.
    env = clean_env(STATE_DIRECTORY=f"{state}:{tmp_path / 'other'}", XDG_DATA_HOME=str(data))
    added = podsync(tmp_path, env, "user", "add", "alice", "--password-stdin", stdin=PASSWORD)
    assert added.returncode == 0, added.stderr
    assert (state / "podsync.db").exists()
    assert not list(data.iterdir())


def test_a_configured_path_wins_and_its_missing_directory_is_an_error(tmp_path: Path) -> None:
    [data] = dirs(tmp_path, "data")
    env = clean_env(
        XDG_DATA_HOME=str(data), PODSYNC_DATABASE_PATH=str(tmp_path / "nowhere" / "p.db")
    )
    added = podsync(tmp_path, env, "user", "add", "alice", "--password-stdin", stdin=PASSWORD)
    assert added.returncode == 1
    assert not (tmp_path / "nowhere").exists()
    assert not list(data.iterdir())


def test_an_old_podsync_db_in_the_working_directory_keeps_working_with_a_note(
    tmp_path: Path, serve: Serve
) -> None:
    old, data = dirs(tmp_path, "old", "data")
    # What an older release left: a database in the directory it was started in.
    made = podsync(
        old, clean_env(PODSYNC_DATABASE_PATH="podsync.db"),
        "user", "add", "alice", "--password-stdin", stdin=PASSWORD,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    env = clean_env(XDG_DATA_HOME=str(data))
    server = serve(old, env, "serve", "--port", "0")
    legacy = old / "podsync.db"
    assert f"(database {legacy};" in server.output()
    assert "created database" not in server.output()
    note = re.search(r"(?m)^.*podsync\.db in the working directory.*$", server.output())
    assert note is not None, server.output()
    assert str(data / "podsync" / "podsync.db") in note.group(0)  # where to move it
    assert login(server.url, "alice") == 200
    assert not list(data.iterdir())

    listed = podsync(old, env, "user", "list")
    assert listed.returncode == 0 and "alice" in listed.stdout
    assert "in the working directory" in listed.stderr


# --- --config after the command name ---


def write_config(directory: Path) -> Path:
    path = directory / "x.toml"
    path.write_text(f'[database]\npath = "{directory / "mine.db"}"\n[log]\naccess_log = false\n')
    return path


def test_config_is_accepted_after_the_command_name(tmp_path: Path, serve: Serve) -> None:
    [data] = dirs(tmp_path, "data")
    config = write_config(tmp_path)
    env = clean_env(XDG_DATA_HOME=str(data))
    added = podsync(
        data, env, "user", "add", "--config", str(config), "bob", "--password-stdin", stdin=PASSWORD
    )
    assert added.returncode == 0, added.stderr
    assert added.stderr.strip() == f"created database at {tmp_path / 'mine.db'}"
    server = serve(data, env, "serve", "--config", str(config), "--port", "0")
    assert login(server.url, "bob") == 200
    listed = podsync(data, env, "user", "list", f"--config={config}")
    assert listed.returncode == 0 and "bob" in listed.stdout
    # Before the command, as always.
    before = podsync(data, env, "--config", str(config), "user", "list")
    assert before.stdout == listed.stdout
    assert not list(data.iterdir())


def test_two_different_config_files_are_a_usage_error(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    other = tmp_path / "other.toml"
    other.write_text("")
    result = podsync(
        tmp_path, clean_env(), "--config", str(other), "user", "list", "--config", str(config)
    )
    assert result.returncode == 2
    assert "--config" in result.stderr
    same = podsync(
        tmp_path, clean_env(), "--config", str(config), "db", "migrate", "--config", str(config)
    )
    assert same.returncode == 0, same.stderr


# --- the page at / ---


def home_notes(page: str) -> tuple[str, bool, bool]:
    address = page.split("<output>")[1].split("</output>")[0]
    loopback = "cannot reach" in page
    plain_http = "type <code>http://</code>" in page
    return address, loopback, plain_http


def test_the_page_says_a_phone_cannot_reach_a_loopback_address(
    tmp_path: Path, serve: Serve
) -> None:
    [data] = dirs(tmp_path, "data")
    server = serve(tmp_path, clean_env(XDG_DATA_HOME=str(data)), "serve", "--port", "0")
    status, page = get(server.url + "/")
    assert status == 200
    address, loopback, plain_http = home_notes(page)
    assert (address, loopback, plain_http) == (server.url, True, True)
    assert "server.host" in page and "server.public_url" in page
    # Reached by a name on the network: no loopback warning, still plain http.
    status, page = get(server.url + "/", Host="192.168.1.20:8080")
    assert home_notes(page) == ("http://192.168.1.20:8080", False, True)
    status, page = get(server.url + "/", Host="localhost:8080")
    assert home_notes(page)[1] is True
    status, page = get(server.url + "/", Host="[::1]:8080")
    assert home_notes(page)[1] is True


def test_the_page_has_no_warning_for_a_public_https_address(tmp_path: Path, serve: Serve) -> None:
    [data] = dirs(tmp_path, "data")
    env = clean_env(XDG_DATA_HOME=str(data), PODSYNC_SERVER_PUBLIC_URL="https://pods.example.org")
    server = serve(tmp_path, env, "serve", "--port", "0")
    assert home_notes(get(server.url + "/")[1]) == ("https://pods.example.org", False, False)


def test_forwarded_host_and_port_count_only_from_a_trusted_proxy(
    tmp_path: Path, serve: Serve
) -> None:
    [data] = dirs(tmp_path, "data")
    env = clean_env(XDG_DATA_HOME=str(data), PODSYNC_SERVER_TRUSTED_PROXIES="127.0.0.1,::1")
    server = serve(tmp_path, env, "serve", "--port", "0")
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "pods.example.org"}
    cases = [
        ({"X-Forwarded-Port": "8443"}, "https://pods.example.org:8443"),
        ({"X-Forwarded-Port": "443"}, "https://pods.example.org"),
        ({}, "https://pods.example.org"),
        ({"X-Forwarded-Port": "junk"}, "https://pods.example.org"),
        ({"X-Forwarded-Port": "99999"}, "https://pods.example.org"),
        # A host that names its port already keeps it.
        ({"X-Forwarded-Host": "pods.example.org:9443", "X-Forwarded-Port": "443"},
         "https://pods.example.org:9443"),
        ({"X-Forwarded-Proto": "http", "X-Forwarded-Port": "80"}, "http://pods.example.org"),
        ({"X-Forwarded-Proto": "http", "X-Forwarded-Port": "8080"},
         "http://pods.example.org:8080"),
    ]  # fmt: skip
    for extra, expected in cases:
        status, page = get(server.url + "/", **{**forwarded, **extra})
        assert status == 200
        assert home_notes(page)[0] == expected, extra
    assert home_notes(get(server.url + "/", **forwarded)[1])[1:] == (False, False)

    untrusted = serve(tmp_path, clean_env(XDG_DATA_HOME=str(data)), "serve", "--port", "0")
    status, page = get(untrusted.url + "/", **forwarded, **{"X-Forwarded-Port": "8443"})
    assert home_notes(page)[0] == untrusted.url
