"""Configuration: defaults, then a TOML file, then PODSYNC_* variables, validated once.

The result is a frozen, typed `Config` that is passed down explicitly; nothing
imports it as a global. Every problem is reported as `ConfigError` naming the key.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podsync.config import database_url
from podsync.config.envvars import CONFIG_ENV, screen_variable
from podsync.config.locations import (
    SYSTEM_CONFIG_FILE,
    config_file_places,
    default_database_path,
    is_file,
)
from podsync.config.sections import (
    AuthConfig,
    DatabaseConfig,
    FeedsConfig,
    GpodderConfig,
    LogConfig,
    ServerConfig,
    SyncConfig,
    UiConfig,
)
from podsync.config.validation import ConfigError, validate
from podsync.numbers import INT64_MAX, INT64_MIN, parse_int

ENV_PREFIX = "PODSYNC_"
__all__ = [
    "AuthConfig",
    "Config",
    "ConfigError",
    "ConfigOrigin",
    "DatabaseConfig",
    "FeedsConfig",
    "GpodderConfig",
    "LogConfig",
    "ServerConfig",
    "SyncConfig",
    "UiConfig",
    "load_config",
    "load_config_and_origin",
    "validate",
]


@dataclass(frozen=True)
class Config:
    server: ServerConfig = field(default_factory=ServerConfig)
    database: DatabaseConfig = field(default_factory=DatabaseConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    sync: SyncConfig = field(default_factory=SyncConfig)
    log: LogConfig = field(default_factory=LogConfig)
    gpodder: GpodderConfig = field(default_factory=GpodderConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    feeds: FeedsConfig = field(default_factory=FeedsConfig)

    def replace(self, section: str, **values: Any) -> Config:
        """A copy with some keys of one section changed, validated like a loaded config."""
        current = getattr(self, section)
        return validate(
            dataclasses.replace(self, **{section: dataclasses.replace(current, **values)})
        )


@dataclass(frozen=True)
class ConfigOrigin:
    """Where a configuration came from, for `podsync config show` and the start-up
    line: the file read ("" for none), per "section.key" that was set "file" or the
    variable's name (else the default), and what to warn of at start-up."""

    file: str = ""
    sources: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # for the person: an old ./podsync.db in use
    looked_in: tuple[str, ...] = ()  # where a file was looked for, when none was named


_SECTION_TYPES: dict[str, type[Any]] = {
    "server": ServerConfig,
    "database": DatabaseConfig,
    "auth": AuthConfig,
    "sync": SyncConfig,
    "log": LogConfig,
    "gpodder": GpodderConfig,
    "ui": UiConfig,
    "feeds": FeedsConfig,
}
_PATH_KEYS = {("database", "path"), ("server", "tls_cert"), ("server", "tls_key")}
DATABASE_URL_SCHEMES = database_url.SCHEMES


def _key_types(section: str) -> dict[str, type]:
    defaults = _SECTION_TYPES[section]()
    return {f.name: type(getattr(defaults, f.name)) for f in dataclasses.fields(defaults)}


def _coerce_file_value(name: str, kind: type, value: Any) -> Any:
    # bool is a subclass of int: check it before int so `port = true` is refused.
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be true or false, not {value!r}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name} must be an integer, not {value!r}")
        return value
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a string, not {value!r}")
        return value
    if kind is tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{name} must be a list of strings, not {value!r}")
        return tuple(value)
    raise AssertionError(kind)  # pragma: no cover - every key has one of the kinds above


def _coerce_env_value(name: str, kind: type, raw: str) -> Any:
    if kind is bool:
        lowered = raw.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"{name} must be true or false, not {raw!r}")
    if kind is int:
        value = parse_int(raw.strip(), INT64_MIN, INT64_MAX)
        if value is None:
            raise ConfigError(f"{name} must be an integer, not {raw!r}")
        return value
    if kind is tuple:
        return tuple(part.strip() for part in raw.split(",") if part.strip())
    return raw


def _resolve_path(value: str, base: Path) -> str:
    if not value:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else base / path)


def load_config(
    path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    system_config: Path | None = SYSTEM_CONFIG_FILE,
) -> Config:
    """Build the configuration.

    `path` is the --config option; without it `PODSYNC_CONFIG`, then the first of
    `locations.config_file_places` that exists (./podsync.toml,
    $XDG_CONFIG_HOME/podsync/podsync.toml, the service's /etc/podsync/podsync.toml:
    `system_config`; None: none), then the built-in defaults.
    """
    return load_config_and_origin(path, environ, cwd, system_config)[0]


def load_config_and_origin(
    path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    system_config: Path | None = SYSTEM_CONFIG_FILE,
) -> tuple[Config, ConfigOrigin]:
    """`load_config`, and where each value came from."""
    env = os.environ if environ is None else environ
    cwd = cwd or Path.cwd()
    values: dict[str, dict[str, Any]] = {name: {} for name in _SECTION_TYPES}
    sources: dict[str, str] = {}

    file_path: Path | None = None
    looked_in: tuple[Path, ...] = ()
    if path is not None:
        file_path = Path(path)
    elif env.get(CONFIG_ENV):
        file_path = Path(env[CONFIG_ENV])
    else:  # an unreadable directory has none
        looked_in = config_file_places(env, cwd, system_config)
        file_path = next((place for place in looked_in if is_file(place)), None)
    if file_path is not None and not file_path.is_absolute():
        file_path = cwd / file_path

    if file_path is not None:
        try:
            with open(file_path, "rb") as fh:
                document = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigError(f"config file {file_path} does not exist") from None
        except OSError as exc:
            hint = ""
            if file_path == system_config:
                hint = (
                    " (the service's configuration, read when no other is named: run the "
                    "command as the service's user, e.g. sudo -u podsync podsync ..., "
                    "or name a file with --config)"
                )
            raise ConfigError(
                f"config file {file_path} cannot be read: {exc.strerror}{hint}"
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {file_path} is not valid TOML: {exc}") from None
        for section, table in document.items():
            if section not in _SECTION_TYPES:
                raise ConfigError(f"unknown section [{section}] in {file_path}")
            if not isinstance(table, dict):
                raise ConfigError(f"[{section}] in {file_path} must be a table")
            kinds = _key_types(section)
            for key, value in table.items():
                name = f"{section}.{key}"
                if key not in kinds:
                    raise ConfigError(f"unknown key {name} in {file_path}")
                coerced = _coerce_file_value(name, kinds[key], value)
                if (section, key) in _PATH_KEYS:
                    coerced = _resolve_path(coerced, file_path.parent)
                values[section][key] = coerced
                sources[name] = "file"

    warnings: list[str] = []
    settings = {f"{ENV_PREFIX}{s}_{k}".upper(): f"{s}.{k}" for s in values for k in _key_types(s)}
    for var, raw in env.items():
        if not var.startswith(ENV_PREFIX):
            continue
        usable, warning = screen_variable(var, raw, settings)  # never a refusal: envvars.py
        warnings += [warning] if warning else []
        if not usable:
            continue
        section, _, key = var[len(ENV_PREFIX) :].lower().partition("_")
        kinds = _key_types(section)
        name = f"{section}.{key}"
        coerced = _coerce_env_value(f"{name} (from {var})", kinds[key], raw)
        if (section, key) in _PATH_KEYS:
            coerced = _resolve_path(coerced, cwd)
        values[section][key] = coerced
        sources[name] = var

    notes: tuple[str, ...] = ()
    if "path" not in values["database"]:  # not in the working directory: locations.py
        values["database"]["path"], notes = default_database_path(env, cwd)
    notes = () if values["database"].get("url") else notes
    config = Config(**{s: _SECTION_TYPES[s](**v) for s, v in values.items()})
    origin = ConfigOrigin(
        str(file_path) if file_path is not None else "",
        sources,
        tuple(sorted(warnings)),
        notes,
        tuple(str(place) for place in looked_in),
    )
    return validate(config), origin


def describe_database(config: Config) -> str:
    """The database in words for logs and messages: the absolute SQLite path, or the
    PostgreSQL host and database name (never the user or password)."""
    if config.database.url:
        return database_url.describe(config.database.url)
    return os.path.abspath(config.database.path)
