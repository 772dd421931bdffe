"""What every command shares: the lazily loaded config, running a coroutine on the
database, reading a password, turning domain errors into `Error: ...` lines."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from podsync.config import Config, ConfigError, ConfigOrigin, load_config_and_origin
from podsync.config.locations import default_data_directory
from podsync.errors import PodsyncError
from podsync.services.passwords import (
    HASH_THREADS,
    MIN_PASSWORD_LENGTH,
    check_password_rules,
)
from podsync.storage.engine import Engine, create_engine, database_errors, describe
from podsync.storage.errors import SchemaTooNew

if TYPE_CHECKING:
    from podsync.services.accounts import AccountService
    from podsync.services.compose.rare import RareServices

T = TypeVar("T")


@dataclass
class Context:
    config_path: str | None
    # --config was typed (before or after the command), not taken from PODSYNC_CONFIG.
    config_from_command_line: bool = False
    # `serve` logs the configuration's warnings and notes itself, once logging is set
    # up; every other command prints them on stderr as it loads the configuration.
    log_warnings: bool = False
    _loaded: tuple[Config, ConfigOrigin] | None = None

    @property
    def config(self) -> Config:
        return self._load()[0]

    @property
    def origin(self) -> ConfigOrigin:
        return self._load()[1]

    def _load(self) -> tuple[Config, ConfigOrigin]:
        if self._loaded is None:
            try:
                self._loaded = load_config_and_origin(self.config_path)
            except ConfigError as exc:
                raise click.ClickException(f"configuration: {exc}") from None
            if not self.log_warnings:
                for warning in self._loaded[1].warnings:
                    click.echo(f"Warning: {warning}", err=True)
                for note in self._loaded[1].notes:
                    click.echo(f"note: {note}", err=True)
        return self._loaded


def _config_after_command(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is None:
        return
    state = ctx.find_object(Context)
    if state is None:  # pragma: no cover - every command runs under the group
        return
    before = state.config_path
    typed_twice = state.config_from_command_line and before is not None
    if typed_twice and os.path.abspath(str(before)) != os.path.abspath(value):
        raise click.UsageError(f"--config given twice: {before} and {value}", ctx)
    state.config_path = value
    state.config_from_command_line = True


def accept_config_option(command: click.Command) -> None:
    """Let `--config FILE` follow the command name too (`podsync serve --config x.toml`,
    `podsync user add --config x.toml NAME`), for the command and every subcommand."""
    command.params.append(
        click.Option(
            ["--config"],
            type=click.Path(dir_okay=False),
            expose_value=False,
            callback=_config_after_command,
            help="TOML config file (the same as --config before the command).",
        )
    )
    if isinstance(command, click.Group):
        for subcommand in command.commands.values():
            accept_config_option(subcommand)


def make_default_directory(config: Config) -> None:
    """Create the default data directory, owner-only, for a new database there. A
    configured path's directory must exist: a typo there is an error, not a new tree."""
    if config.database.url:
        return
    directory = Path(config.database.path).parent
    if directory == default_data_directory(os.environ) and not directory.exists():
        directory.mkdir(parents=True, mode=0o700)
        directory.chmod(0o700)  # whatever the umask


pass_context = click.make_pass_decorator(Context)


def database_exists(config: Config) -> bool:
    """Whether the configured SQLite file is there (a PostgreSQL database always is)."""
    return bool(config.database.url) or os.path.exists(config.database.path)


def require_database(config: Config) -> None:
    """A command that only reads or changes data never creates a database: a typo in
    the path would otherwise answer from a new empty one ("no user named alice")."""
    if not database_exists(config):
        path = os.path.abspath(config.database.path)
        raise click.ClickException(f"no database at {path} (check --config or PODSYNC_CONFIG)")


def refuse_a_database_of_root_in_another_users_directory(config: Config) -> None:
    """`sudo podsync user add alice` before the service ever started: root would make
    the service's database, and the service, running as its own user, could not
    open it. (Root on an existing database is fine: SQLite gives the files it makes
    beside it the database's owner.)"""
    if config.database.url or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    directory = Path(config.database.path).parent
    try:
        owner = directory.stat().st_uid
    except OSError:
        return
    if owner != 0:
        import pwd

        try:
            name = pwd.getpwuid(owner).pw_name
        except KeyError:
            name = str(owner)
        raise click.ClickException(
            f"no database at {os.path.abspath(config.database.path)}, and root would make "
            f"one in {directory}, which belongs to {name}: run this as that user "
            f"(sudo -u {name} podsync ...), or start the service first"
        )


def run_with_db(
    config: Config, action: Callable[[Engine], Awaitable[T]], create: bool = False
) -> T:
    """Open (and migrate) the database, run `action`, close; domain errors -> Error:.

    Only `create=True` (serve, user add, db migrate) may make a missing database,
    and says so on stderr."""
    new = not database_exists(config)
    if new and not create:
        require_database(config)
    if new:
        refuse_a_database_of_root_in_another_users_directory(config)
        make_default_directory(config)

    async def main() -> T:
        db = create_engine(config.database)
        await db.open()
        try:
            return await action(db)
        finally:
            await db.close()

    try:
        return asyncio.run(main())
    except (PodsyncError, SchemaTooNew, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from None
    except database_errors() as exc:
        raise click.ClickException(f"database {describe(config.database)}: {exc}") from None
    finally:
        if new and database_exists(config):
            click.echo(f"created database at {os.path.abspath(config.database.path)}", err=True)


def run_with_services(
    config: Config,
    action: Callable[[RareServices], Awaitable[T]],
    create: bool = False,
    password_threads: int = HASH_THREADS,
) -> T:
    """`run_with_db` with the services built over the database (services/compose/),
    closed after `action`."""
    from podsync.services.compose.core import Services  # what only some commands load
    from podsync.services.compose.rare import RareServices

    async def with_services(db: Engine) -> T:
        core = Services(config, db, password_threads=password_threads)
        try:
            return await action(RareServices(core))
        finally:
            await core.close()

    return run_with_db(config, with_services, create)


def run_with_accounts(
    config: Config, action: Callable[[AccountService], Awaitable[T]], create: bool = False
) -> T:
    return run_with_services(config, lambda services: action(services.accounts), create)


def read_password(from_stdin: bool) -> str:
    """One line from stdin with --password-stdin, else a hidden prompt asked twice."""
    if from_stdin:
        line = sys.stdin.readline()
        if not line:
            raise click.ClickException("--password-stdin: nothing on standard input")
        return line.rstrip("\r\n")
    if not sys.stdin.isatty():
        raise click.ClickException("no terminal to ask for a password; use --password-stdin")
    value: str = click.prompt(
        f"Password (at least {MIN_PASSWORD_LENGTH} characters)",
        hide_input=True,
        confirmation_prompt=True,
        value_proc=_keep_if_valid,
    )
    return value


def _keep_if_valid(password: str) -> str:
    """A password typed at the prompt, checked before it is asked again: one too
    short is refused at once (the prompt asks anew) rather than after the repeat."""
    try:
        check_password_rules(password)
    except PodsyncError as exc:
        raise click.UsageError(str(exc)) from None
    return password
