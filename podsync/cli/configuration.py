"""`podsync config show|check`: the configuration in force, and whether it is sound."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import ssl
from typing import Any

import click

from podsync.cli.base import Context, pass_context
from podsync.config import Config, ConfigOrigin
from podsync.config.locations import default_data_directory
from podsync.errors import METRICS_EXTRA, POSTGRES_EXTRA
from podsync.storage.errors import REDACTED, redact


@click.group("config", short_help="Show or check the configuration.")
def config_group() -> None:
    """Show or check the configuration (file, PODSYNC_* variables, defaults).

    \b
    Example:
      podsync config show
      podsync --config /etc/podsync/podsync.toml config check
    """


@config_group.command("show", short_help="Print the configuration in force as TOML.")
@pass_context
def config_show(ctx: Context) -> None:
    """Print the configuration in force as TOML, each value's source in a comment.

    The secret key and a database URL's passwords (in its user part and in query
    parameters such as password= and sslpassword=) are shown as "<redacted>".

    \b
    Example:
      podsync config show
      PODSYNC_SERVER_PORT=9000 podsync config show | grep port
    """
    click.echo(render_toml(ctx.config, ctx.origin), nl=False)


@config_group.command("check", short_help="Check the configuration; exit 1 on an error.")
@pass_context
def config_check(ctx: Context) -> None:
    """Check the configuration: exit 0 when podsync can start with it, else 1 with
    the error. Beyond the values, checks that the database's directory exists and
    that the TLS certificate and key load.

    \b
    Example:
      podsync --config /etc/podsync/podsync.toml config check && systemctl restart podsync
    """
    config = ctx.config  # a bad value or file is an `Error: configuration: ...` already
    problem = _environment_problem(config)
    if problem:
        raise click.ClickException(problem)
    click.echo(f"configuration ok ({_file_words(ctx.origin)})")


def _environment_problem(config: Config) -> str | None:
    if not config.database.url:
        directory = os.path.dirname(os.path.abspath(config.database.path))
        # The default directory is made with the database; a configured one must exist.
        default = str(default_data_directory(os.environ))
        if not os.path.isdir(directory) and directory != default:
            return f"database.path: directory {directory} does not exist"
    elif importlib.util.find_spec("asyncpg") is None:
        return f"database.url needs the PostgreSQL driver (asyncpg): {POSTGRES_EXTRA}"
    if config.server.metrics and importlib.util.find_spec("prometheus_client") is None:
        return f"server.metrics needs prometheus-client: {METRICS_EXTRA}"
    if config.server.tls_cert:
        try:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(config.server.tls_cert, config.server.tls_key)
        except (OSError, ssl.SSLError) as exc:
            return (
                f"server.tls_cert/tls_key: cannot load {config.server.tls_cert} "
                f"with {config.server.tls_key}: {exc}"
            )
    return None


def _file_words(origin: ConfigOrigin) -> str:
    if origin.file:
        return f"file {origin.file}"
    looked = f" (looked for {', '.join(origin.looked_in)})" if origin.looked_in else ""
    return f"no config file{looked}, built-in defaults"


def render_toml(config: Config, origin: ConfigOrigin) -> str:
    """Every section and key, in the order of config.example.toml, as TOML that
    `load_config` reads back to the same configuration (secrets aside)."""
    read = f"read from {origin.file}" if origin.file else _file_words(origin)
    lines = [
        "# podsync configuration in force",
        f"# {read}; a value's source follows it (default, file or variable)",
    ]
    for section in dataclasses.fields(config):
        lines.append(f"\n[{section.name}]")
        values = getattr(config, section.name)
        for key in dataclasses.fields(values):
            name = f"{section.name}.{key.name}"
            shown = _shown_value(name, getattr(values, key.name))
            source = origin.sources.get(name, "default")
            if source == "file":
                source = origin.file
            lines.append(f"{key.name} = {shown}  # {source}")
    return "\n".join(lines) + "\n"


# Paths are shown absolute: a relative default is relative to the working directory,
# while a relative path in a file is relative to the file.
_PATHS = ("database.path", "server.tls_cert", "server.tls_key")


def _shown_value(name: str, value: Any) -> str:
    if name in _PATHS and value:
        value = os.path.abspath(value)
    elif name == "auth.secret_key" and value:
        value = REDACTED
    elif name == "database.url" and value:
        value = redact(value)
    return _toml(value)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    # A JSON string is a TOML basic string (same escapes); keep non-ASCII as is,
    # as TOML has no surrogate-pair escapes.
    # since TOML has no surrogate-pair escapes; TOML also forbids a raw DEL.
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007f")
