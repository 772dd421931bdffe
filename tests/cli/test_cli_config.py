"""Contract section 9 (rev. 2): `podsync config show`, `config check`, `version`."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from podsync import __version__
from podsync.cli import cli
from podsync.config import load_config

SECRET = "a-very-secret-key-of-32-characters"


def _show(tmp_path: Path, toml: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    path = tmp_path / "podsync.toml"
    path.write_text(toml)
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "show"], env=env)
    return result.exit_code, result.stdout, result.stderr


def test_show_prints_every_value_with_its_source_and_redacts_the_secrets(tmp_path: Path) -> None:
    code, out, _ = _show(
        tmp_path,
        f'[server]\nport = 9001\n[auth]\nsecret_key = "{SECRET}"\n'
        '[database]\nurl = "postgresql://pods:hunter2secret@db.example.org:5432/podsync"\n',
        env={"PODSYNC_SERVER_HOST": "192.0.2.1", "PODSYNC_LOG_FORMAT": "json"},
    )
    assert code == 0
    assert SECRET not in out and "hunter2secret" not in out
    config_path = tmp_path / "podsync.toml"
    lines = out.splitlines()
    assert f"# read from {config_path}; a value's source follows it" in lines[1]
    assert f"port = 9001  # {config_path}" in lines
    assert 'host = "192.0.2.1"  # PODSYNC_SERVER_HOST' in lines
    assert 'format = "json"  # PODSYNC_LOG_FORMAT' in lines
    assert "access_token_lifetime = 3600  # default" in lines
    assert f'secret_key = "<redacted>"  # {config_path}' in lines
    assert (
        f'url = "postgresql://pods:<redacted>@db.example.org:5432/podsync"  # {config_path}'
        in lines
    )
    # Valid TOML with every section and key.
    shown = tomllib.loads(out)
    assert set(shown) == {"server", "database", "auth", "sync", "log", "gpodder", "feeds", "ui"}
    assert shown["server"]["trusted_proxies"] == []
    assert shown["gpodder"]["enabled"] is True


def test_show_reads_back_to_the_same_configuration(tmp_path: Path) -> None:
    code, out, _ = _show(
        tmp_path,
        '[server]\ntrusted_proxies = ["10.0.0.0/8", "::1"]\npublic_url = "https://p.example"\n'
        '[sync]\npage_size_default = 20\n[log]\nlevel = "debug"\n',
    )
    assert code == 0
    again = tmp_path / "again.toml"
    again.write_text(out)
    # The default database path (the user's data directory) is shown as it is.
    assert load_config(again, environ={}) == load_config(tmp_path / "podsync.toml")


def test_show_without_a_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {
        "PODSYNC_CONFIG": None,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    result = CliRunner().invoke(cli, ["config", "show"], env=env)
    assert result.exit_code == 0
    looked = f"{tmp_path / 'podsync.toml'}, {tmp_path / 'config' / 'podsync' / 'podsync.toml'}"
    assert f"# no config file (looked for {looked}, /etc/podsync/podsync.toml), " in result.stdout
    assert f'path = "{tmp_path / "data" / "podsync" / "podsync.db"}"  # default' in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_check_accepts_a_sound_configuration(tmp_path: Path) -> None:
    path = tmp_path / "podsync.toml"
    path.write_text('[server]\nport = 9001\n[database]\npath = "data.db"\n')
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "check"])
    assert (result.exit_code, result.stdout) == (0, f"configuration ok (file {path})\n")
    assert not (tmp_path / "data.db").exists()


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[server]\nport = 70000\n", "Error: configuration: server.port must be between"),
        ("[server]\nprot = 1\n", "Error: configuration: unknown key server.prot in"),
        ('[database]\npath = "no/such/dir/p.db"\n', "Error: database.path: directory "),
        (
            '[server]\ntls_cert = "missing.pem"\ntls_key = "missing.key"\n',
            "Error: server.tls_cert/tls_key: cannot load ",
        ),
        ("[server\n", "Error: configuration: config file "),
    ],
)
def test_check_fails_with_one_line_naming_the_problem(
    tmp_path: Path, toml: str, message: str
) -> None:
    path = tmp_path / "podsync.toml"
    path.write_text(toml)
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "check"])
    assert result.exit_code == 1
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1
    assert result.stdout == ""


def test_check_reads_the_environment_too(tmp_path: Path) -> None:
    path = tmp_path / "podsync.toml"
    path.write_text("")
    result = CliRunner().invoke(
        cli, ["--config", str(path), "config", "check"], env={"PODSYNC_SERVER_PORT": "x"}
    )
    assert result.exit_code == 1
    assert "PODSYNC_SERVER_PORT" in result.stderr


def test_version_command_is_the_same_as_the_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["version"])
    assert (result.exit_code, result.stdout) == (0, f"podsync {__version__}\n")
    assert __version__ != "0+unknown"
    real = subprocess.run(
        ["python", "-m", "podsync", "version"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=30,
    )
    assert (real.returncode, real.stdout) == (0, f"podsync {__version__}\n")


def test_config_option_help_names_the_environment_variable() -> None:
    assert "PODSYNC_CONFIG" in CliRunner().invoke(cli, ["--help"]).stdout


@pytest.mark.parametrize("group", [[], ["user"], ["opml"], ["db"], ["config"]], ids=str)
def test_group_help_has_an_example_and_uncut_command_lists(group: list[str]) -> None:
    result = CliRunner().invoke(cli, [*group, "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.stdout
    commands = result.stdout.split("Commands:")[1]
    assert "..." not in commands
