"""The `podsync` command line: thin commands over the same services the server uses.

The group and `serve` live here; each command group has its own module.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import click
from click.core import ParameterSource

from podsync import __version__
from podsync.cli import configuration, db, opml, remote_import, users
from podsync.cli.base import (
    Context,
    accept_config_option,
    database_exists,
    make_default_directory,
    pass_context,
)
from podsync.config import ConfigError
from podsync.errors import PodsyncError
from podsync.storage.engine import database_errors, describe
from podsync.storage.errors import SchemaTooNew

log = logging.getLogger("podsync")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="podsync", message="%(prog)s %(version)s")
@click.option(
    "--config",
    "config_path",
    envvar="PODSYNC_CONFIG",
    type=click.Path(dir_okay=False),
    help=(
        "TOML config file [env: PODSYNC_CONFIG; default: ./podsync.toml, else "
        "/etc/podsync/podsync.toml, when it exists]."
    ),
)
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """podsync: keep podcast subscriptions in sync between your apps.

    \b
    Example:
      podsync user add alice
      podsync serve --port 8080
    """
    typed = ctx.get_parameter_source("config_path") == ParameterSource.COMMANDLINE
    ctx.obj = Context(config_path, config_from_command_line=typed)


@cli.command()
@click.option("--host", help="Address to listen on (default: server.host).")
@click.option("--port", type=click.IntRange(0, 65535), help="Port (default: server.port).")
@pass_context
def serve(ctx: Context, host: str | None, port: int | None) -> None:
    """Run the sync server until SIGINT or SIGTERM.

    \b
    Example:
      podsync --config /etc/podsync/podsync.toml serve --port 8080
    """
    from podsync.logs import configure_logging
    from podsync.web.server import serve as run_server

    ctx.log_warnings = True
    config = ctx.config
    overrides: dict[str, Any] = {}
    if host is not None:
        overrides["host"] = host
    if port is not None:
        overrides["port"] = port
    if overrides:
        try:
            config = config.replace("server", **overrides)
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from None
    configure_logging(config.log.level, config.log.format)
    for warning in ctx.origin.warnings:
        log.warning("%s", warning)
    for note in ctx.origin.notes:
        log.warning("%s", note)
    try:
        new_database = not database_exists(config)
        if new_database:
            make_default_directory(config)
        asyncio.run(run_server(config, new_database, ctx.origin.file))
    except (OSError, SchemaTooNew, PodsyncError) as exc:
        raise click.ClickException(str(exc)) from None
    except database_errors() as exc:
        raise click.ClickException(f"database {describe(config.database)}: {exc}") from None


@cli.command()
def version() -> None:
    """Print the version, the same as --version.

    \b
    Example:
      podsync version
    """
    click.echo(f"podsync {__version__}")


users.user.add_command(remote_import.import_from)
cli.add_command(users.user)
cli.add_command(opml.opml)
cli.add_command(db.db)
cli.add_command(configuration.config_group)
for _command in cli.commands.values():
    accept_config_option(_command)


def main() -> None:
    cli(prog_name="podsync")
