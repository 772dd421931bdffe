"""Contract section 11: defaults, the TOML file, PODSYNC_* overrides, validation."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from podsync.config import Config, ConfigError, load_config, load_config_and_origin
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config.example.toml"


def _file(tmp_path: Path, text: str, name: str = "podsync.toml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_without_file_or_environment(tmp_path: Path) -> None:
    config = load_config(None, environ={"HOME": str(tmp_path / "home")}, cwd=tmp_path)
    # The database is in the user's data directory, not the working directory.
    data = tmp_path / "home" / ".local" / "share" / "podsync" / "podsync.db"
    assert config == Config().replace("database", path=str(data))
    assert (config.server.host, config.server.port) == ("127.0.0.1", 8080)
    assert config.server.max_body_bytes == 1048576
    assert config.database.durability == "full"
    assert config.auth.access_token_lifetime == 3600
    assert config.auth.refresh_token_lifetime == 2592000
    assert (config.auth.login_max_failures, config.auth.login_lockout_seconds) == (5, 900)
    assert config.sync.max_clock_skew == 300
    assert (config.sync.page_size_default, config.sync.page_size_max) == (50, 500)
    assert config.sync.action_id_retention_days == 90
    assert (config.log.level, config.log.access_log) == ("info", True)


def test_example_file_equals_the_defaults() -> None:
    config = load_config(EXAMPLE, environ={})
    expected = Config().replace("database", path=str(EXAMPLE.parent / "podsync.db"))
    assert config == expected


def test_example_file_lists_every_key_with_a_comment() -> None:
    document = tomllib.loads(EXAMPLE.read_text())
    sections = {f.name: f.type for f in dataclasses.fields(Config)}
    assert set(document) == set(sections)
    for section, table in document.items():
        fields = {f.name for f in dataclasses.fields(getattr(Config(), section))}
        assert set(table) == fields, section
    for line in EXAMPLE.read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            assert "#" in line.split("=", 1)[1], f"no comment: {line}"


def test_file_from_option_environment_or_working_directory(tmp_path: Path) -> None:
    option = _file(tmp_path, "[server]\nport = 1001\n", "a/option.toml")
    env_file = _file(tmp_path, "[server]\nport = 1002\n", "b/env.toml")
    _file(tmp_path, "[server]\nport = 1003\n")
    env = {"PODSYNC_CONFIG": str(env_file)}
    assert load_config(option, environ=env, cwd=tmp_path).server.port == 1001
    assert load_config(None, environ=env, cwd=tmp_path).server.port == 1002
    assert load_config(None, environ={}, cwd=tmp_path).server.port == 1003
    # A relative --config or PODSYNC_CONFIG is relative to the working directory.
    assert load_config("a/option.toml", environ={}, cwd=tmp_path).server.port == 1001
    relative_env = {"PODSYNC_CONFIG": "b/env.toml"}
    assert load_config(None, environ=relative_env, cwd=tmp_path).server.port == 1002


def test_missing_or_broken_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml does not exist"):
        load_config(tmp_path / "nope.toml", environ={})
    broken = _file(tmp_path, "[server\nport = 1\n", "broken.toml")
    with pytest.raises(ConfigError, match=r"broken\.toml is not valid TOML"):
        load_config(broken, environ={})
    with pytest.raises(ConfigError, match=r"does not exist"):
        load_config(None, environ={"PODSYNC_CONFIG": str(tmp_path / "gone.toml")})


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = _file(tmp_path, '[server]\nport = 1001\nhost = "0.0.0.0"\n')
    env = {
        "PODSYNC_SERVER_PORT": "9000",
        "PODSYNC_SERVER_TRUSTED_PROXIES": "10.0.0.1, 192.168.0.0/16,,",
        "PODSYNC_SERVER_PUBLIC_URL": "https://pods.example.org",
        "PODSYNC_LOG_ACCESS_LOG": "false",
        "PODSYNC_AUTH_LOGIN_MAX_FAILURES": " 7 ",
        "PODSYNC_AUTH_SECRET_KEY": "a secret from the environment",
        "PODSYNC_DATABASE_DURABILITY": "normal",
        "PODSYNC_SYNC_PAGE_SIZE_MAX": "1000",
        "PODSYNC_SERVER_WORKERS": "2",
        "HOME": "/root",
        "PODSYNCX": "not ours",
    }
    config = load_config(path, environ=env, cwd=tmp_path)
    assert config.server.port == 9000
    assert config.server.host == "0.0.0.0"  # noqa: S104
    assert config.server.trusted_proxies == ("10.0.0.1", "192.168.0.0/16")
    assert config.server.public_url == "https://pods.example.org"
    assert config.log.access_log is False
    assert config.auth.login_max_failures == 7
    assert config.auth.secret_key == "a secret from the environment"
    assert config.database.durability == "normal"
    assert config.sync.page_size_max == 1000
    assert config.server.workers == 2
    assert "a secret from the environment" not in repr(config)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("true", True),
        ("1", True),
        ("YES", True),
        ("on", True),
        ("false", False),
        ("0", False),
        ("No", False),
        ("off", False),
    ],
)
def test_booleans_from_the_environment(raw: str, value: bool) -> None:
    config = load_config(None, environ={"PODSYNC_LOG_ACCESS_LOG": raw})
    assert config.log.access_log is value


def test_empty_list_from_the_environment() -> None:
    config = load_config(None, environ={"PODSYNC_SERVER_TRUSTED_PROXIES": ""})
    assert config.server.trusted_proxies == ()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[nope]\nx = 1\n", "[nope]"),
        ("[server]\nnope = 1\n", "server.nope"),
        ("[server]\nmax_body = 1\n", "server.max_body"),
        ("server = 1\n", "[server]"),
        ("[server.extra]\nx = 1\n", "server.extra"),
    ],
)
def test_unknown_section_or_key_is_an_error_naming_it(
    tmp_path: Path, text: str, named: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_file(tmp_path, text), environ={})
    assert named in str(caught.value)


@pytest.mark.parametrize(
    "var",
    [
        "PODSYNC_NOPE",
        "PODSYNC_SERVER",
        "PODSYNC_SERVER_NOPE",
        "PODSYNC_NOPE_PORT",
        "PODSYNC_",
        "PODSYNC_CONFIGURATION",
    ],
)
def test_unknown_environment_variable_is_a_warning_naming_it(var: str) -> None:
    # Contract section 14: never a refusal to start; the value is never repeated.
    config, origin = load_config_and_origin(None, environ={var: "secret-value"})
    assert config == load_config(None, environ={})
    assert len(origin.warnings) == 1
    assert f"environment variable {var} names no setting" in origin.warnings[0]
    assert "the closest is PODSYNC_" in origin.warnings[0]
    assert "secret-value" not in origin.warnings[0]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[server]\nport = true\n", "server.port"),  # bool is an int in Python
        ('[server]\nport = "8080"\n', "server.port"),
        ("[server]\nport = 80.5\n", "server.port"),
        ("[server]\nhost = 5\n", "server.host"),
        ('[server]\ntrusted_proxies = "10.0.0.1"\n', "server.trusted_proxies"),
        ("[server]\ntrusted_proxies = [1]\n", "server.trusted_proxies"),
        ("[server]\nmax_body_bytes = false\n", "server.max_body_bytes"),
        ("[log]\naccess_log = 1\n", "log.access_log"),
        ('[log]\naccess_log = "true"\n', "log.access_log"),
        ("[auth]\naccess_token_lifetime = true\n", "auth.access_token_lifetime"),
        ("[database]\npath = 1\n", "database.path"),
        ("[database]\ndurability = true\n", "database.durability"),
        ("[sync]\npage_size_max = 2024-01-01\n", "sync.page_size_max"),
    ],
)
def test_wrong_type_in_the_file_is_an_error_naming_the_key(
    tmp_path: Path, text: str, key: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_file(tmp_path, text), environ={})
    assert key in str(caught.value)


@pytest.mark.parametrize(
    ("var", "raw", "key"),
    [
        ("PODSYNC_SERVER_PORT", "abc", "server.port"),
        ("PODSYNC_SERVER_PORT", "80.5", "server.port"),
        ("PODSYNC_SERVER_PORT", "true", "server.port"),
        ("PODSYNC_SERVER_PORT", "70000", "server.port"),
        ("PODSYNC_LOG_ACCESS_LOG", "maybe", "log.access_log"),
        ("PODSYNC_SERVER_TRUSTED_PROXIES", "10.0.0.1,not-an-ip", "server.trusted_proxies"),
        ("PODSYNC_DATABASE_DURABILITY", "fast", "database.durability"),
        ("PODSYNC_DATABASE_PATH", "", "database.path"),
    ],
)
def test_bad_environment_value_is_an_error_naming_the_key(var: str, raw: str, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(None, environ={var: raw})
    assert key in str(caught.value)


@pytest.mark.parametrize(
    ("section", "values", "key"),
    [
        ("server", {"port": 65536}, "server.port"),
        ("server", {"port": -1}, "server.port"),
        ("server", {"host": " "}, "server.host"),
        ("server", {"public_url": "pods.example.org"}, "server.public_url"),
        ("server", {"public_url": "ftp://pods.example.org"}, "server.public_url"),
        # urllib refuses these outright (a bracket left open; an IPv4 address in
        # brackets on current releases): a configuration error, not a traceback.
        ("server", {"public_url": "https://[::1"}, "server.public_url"),
        ("server", {"public_url": "https://[127.0.0.1]"}, "server.public_url"),
        ("server", {"trusted_proxies": ("10.0.0.300",)}, "server.trusted_proxies"),
        ("server", {"max_body_bytes": 100}, "server.max_body_bytes"),
        ("server", {"tls_cert": "/etc/cert.pem"}, "server.tls_key"),
        ("database", {"durability": "FULL"}, "database.durability"),
        ("auth", {"secret_key": "short"}, "auth.secret_key"),
        ("auth", {"access_token_lifetime": 0}, "auth.access_token_lifetime"),
        ("auth", {"refresh_token_lifetime": 0}, "auth.refresh_token_lifetime"),
        ("auth", {"login_max_failures": 0}, "auth.login_max_failures"),
        ("auth", {"login_lockout_seconds": 0}, "auth.login_lockout_seconds"),
        ("sync", {"max_clock_skew": -1}, "sync.max_clock_skew"),
        ("sync", {"page_size_max": 0}, "sync.page_size_max"),
        ("sync", {"page_size_default": 501}, "sync.page_size_default"),
        ("sync", {"page_size_default": 0}, "sync.page_size_default"),
        ("sync", {"action_id_retention_days": 0}, "sync.action_id_retention_days"),
        ("log", {"level": "verbose"}, "log.level"),
        ("server", {"shutdown_timeout": -1}, "server.shutdown_timeout"),
        ("server", {"workers": 0}, "server.workers"),
        ("server", {"workers": 65}, "server.workers"),
        ("server", {"cors_origins": ("app.example.org",)}, "server.cors_origins"),
        ("server", {"cors_origins": ("https://app.example.org/x",)}, "server.cors_origins"),
        ("server", {"cors_origins": ("https://[::1",)}, "server.cors_origins"),
        ("database", {"url": "mysql://u@h/db"}, "database.url"),
        ("auth", {"login_max_failures_per_address": 0}, "auth.login_max_failures_per_address"),
        ("auth", {"max_pending_logins": 0}, "auth.max_pending_logins"),
        ("sync", {"max_subscriptions_per_user": 0}, "sync.max_subscriptions_per_user"),
        ("log", {"format": "xml"}, "log.format"),
        ("gpodder", {"session_lifetime": 0}, "gpodder.session_lifetime"),
        ("gpodder", {"episode_page_size": 0}, "gpodder.episode_page_size"),
        ("gpodder", {"basic_cache_seconds": -1}, "gpodder.basic_cache_seconds"),
    ],
)
def test_value_out_of_range_is_an_error_naming_the_key(
    tmp_path: Path, section: str, values: dict[str, object], key: str
) -> None:
    body = "".join(
        f"{k} = {list(v) if isinstance(v, tuple) else v!r}\n".replace("'", '"')
        for k, v in values.items()
    )
    with pytest.raises(ConfigError) as caught:
        load_config(_file(tmp_path, f"[{section}]\n{body}"), environ={})
    assert key in str(caught.value)


def test_relative_paths_in_a_file_are_relative_to_the_file(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        '[database]\npath = "data/pods.db"\n[server]\ntls_cert = "c.pem"\ntls_key = "/abs/k.pem"\n',
        "etc/podsync.toml",
    )
    config = load_config(path, environ={}, cwd=tmp_path / "elsewhere")
    assert config.database.path == str(tmp_path / "etc" / "data" / "pods.db")
    assert config.server.tls_cert == str(tmp_path / "etc" / "c.pem")
    assert config.server.tls_key == "/abs/k.pem"


def test_relative_paths_from_the_environment_are_relative_to_the_working_directory(
    tmp_path: Path,
) -> None:
    path = _file(tmp_path, '[database]\npath = "from-file.db"\n', "etc/podsync.toml")
    env = {"PODSYNC_DATABASE_PATH": "run/pods.db"}
    config = load_config(path, environ=env, cwd=tmp_path / "work")
    assert config.database.path == str(tmp_path / "work" / "run" / "pods.db")


def test_replace_validates_like_loading() -> None:
    assert Config().replace("server", port=0).server.port == 0
    with pytest.raises(ConfigError, match=r"server\.port"):
        Config().replace("server", port=70000)


def test_cli_reports_a_bad_configuration_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # No database anywhere (not even the user's own in ~/.local/share/podsync).
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    bad = _file(tmp_path, "[server]\nport = true\n", "bad.toml")
    result = run_cli(None, "--config", str(bad), "user", "list")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: configuration: ")
    assert "server.port" in result.stderr
    assert result.stderr.count("\n") == 1
    monkeypatch.setenv("PODSYNC_SERVER_PROT", "1")
    result = run_cli(None, "user", "list")
    assert result.exit_code == 1
    assert "PODSYNC_SERVER_PROT" in result.stderr
