"""The `podsync` command line: thin commands over the same services the server uses.

The group and `serve` live here; each command group has its own module, loaded when
its name is on the command line (or `--help` lists it): `podsync serve` runs without
the other commands' modules and the services only they use (about 0.5 MB of a
server's memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import socket
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from podsync import __version__
from podsync.cli.base import (
    Context,
    accept_config_option,
    database_exists,
    make_default_directory,
    pass_context,
)
from podsync.config import Config, ConfigError, load_config_and_origin
from podsync.config.validation import MAX_WORKERS
from podsync.errors import PodsyncError
from podsync.storage.engine import database_errors, describe
from podsync.storage.errors import SchemaTooNew

if TYPE_CHECKING:  # the server's modules load only when `serve` runs
    from podsync.web.process import Worker

log = logging.getLogger("podsync")

# The command groups by name: (module under podsync.cli, its click group).
_GROUPS = {
    "config": ("configuration", "config_group"),
    "db": ("db", "db"),
    "opml": ("opml", "opml"),
    "user": ("users", "user"),
}


class _Commands(click.Group):
    """The top-level group: `serve` and `version` here, the command groups loaded by
    name on first use (click's documented way to load subcommands lazily)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *_GROUPS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in _GROUPS:
            module, name = _GROUPS[cmd_name]
            group: click.Group = getattr(importlib.import_module(f"podsync.cli.{module}"), name)
            if cmd_name == "user":
                from podsync.cli.remote_import import import_from

                group.add_command(import_from)
            accept_config_option(group)
            self.add_command(group, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="podsync", message="%(prog)s %(version)s")
@click.option(
    "--config",
    "config_path",
    envvar="PODSYNC_CONFIG",
    type=click.Path(dir_okay=False),
    help=(
        "TOML config file [env: PODSYNC_CONFIG; default: the first that exists of "
        "./podsync.toml, $XDG_CONFIG_HOME/podsync/podsync.toml (~/.config/podsync/...) "
        "and /etc/podsync/podsync.toml]."
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
@click.option(
    "--workers",
    type=click.IntRange(1, MAX_WORKERS),
    help="Processes serving the address and database (default: server.workers).",
)
@pass_context
def serve(ctx: Context, host: str | None, port: int | None, workers: int | None) -> None:
    """Run the sync server until SIGINT or SIGTERM.

    SIGHUP reads the configuration again and starts over with it, one worker at a
    time; the address stays (a new one takes a restart).

    \b
    Example:
      podsync --config /etc/podsync/podsync.toml serve --port 8080
      podsync serve --workers 2      # two processes: both cores of a small machine
    """
    from podsync.logs import configure_logging
    from podsync.serve import native_heap
    from podsync.serve.server import listen
    from podsync.serve.server import serve as run_server

    ctx.log_warnings = True
    overrides: dict[str, Any] = {}
    if host is not None:
        overrides["host"] = host
    if port is not None:
        overrides["port"] = port
    if workers is not None:
        overrides["workers"] = workers
    config = _with_overrides(ctx.config, overrides)
    configure_logging(config.log.level, config.log.format)
    native_heap.tune()  # before any thread or worker: they share or inherit it
    for warning in ctx.origin.warnings:
        log.warning("%s", warning)
    for note in ctx.origin.notes:
        log.warning("%s", note)

    def read_again() -> Config:
        """SIGHUP: the file and the environment again, with this command line's options."""
        again = _with_overrides(load_config_and_origin(ctx.config_path)[0], overrides)
        configure_logging(again.log.level, again.log.format, force=True)
        return again

    with _server_errors(config):
        new_database = not database_exists(config)
        if new_database:
            make_default_directory(config)
        sockets = listen(config.server.host, config.server.port)
    if config.server.workers == 1:
        with _server_errors(config):
            asyncio.run(run_server(config, new_database, ctx.origin.file, sockets, read_again))
        return
    from podsync.serve.workers import supervise  # here: one process never needs it

    with _server_errors(config):  # the parent's own faults (its private directory)
        status = supervise(config, sockets, _worker_main, read_again, new_database, ctx.origin.file)
    if status:
        sys.exit(status)


def _with_overrides(config: Config, overrides: dict[str, Any]) -> Config:
    if not overrides:
        return config
    try:
        return config.replace("server", **overrides)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


@contextlib.contextmanager
def _server_errors(config: Config) -> Iterator[None]:
    """What stops a server, as one `Error:` line."""
    try:
        yield
    except (OSError, SchemaTooNew, PodsyncError) as exc:
        raise click.ClickException(str(exc)) from None
    except database_errors() as exc:
        raise click.ClickException(f"database {describe(config.database)}: {exc}") from None


def _worker_main(config: Config, sockets: list[socket.socket], worker: Worker) -> int:
    """One worker, in the process the supervisor forked: its exit status, with the
    `Error:` line a single server would print."""
    from podsync.serve.server import serve_worker

    try:
        with _server_errors(config):
            asyncio.run(serve_worker(config, sockets, worker))
    except click.ClickException as exc:
        exc.show()
        return 1
    return 0


@cli.command()
def version() -> None:
    """Print the version, the same as --version.

    \b
    Example:
      podsync version
    """
    click.echo(f"podsync {__version__}")


for _command in cli.commands.values():
    accept_config_option(_command)


def main() -> None:
    cli(prog_name="podsync")
