"""What every command shares: the lazily loaded config, running a coroutine on the
database, reading a password, turning domain errors into `Error: ...` lines."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import click

from podsync.config import Config, ConfigError, ConfigOrigin, load_config_and_origin
from podsync.errors import PodsyncError
from podsync.services.accounts import AccountService
from podsync.services.passwords import PasswordService
from podsync.storage.engine import DATABASE_ERRORS, Engine, create_engine, describe
from podsync.storage.errors import SchemaTooNew

T = TypeVar("T")


@dataclass
class Context:
    config_path: str | None
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
        return self._loaded


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


def run_with_db(
    config: Config, action: Callable[[Engine], Awaitable[T]], create: bool = False
) -> T:
    """Open (and migrate) the database, run `action`, close; domain errors -> Error:.

    Only `create=True` (serve, user add, db migrate) may make a missing database,
    and says so on stderr."""
    new = not database_exists(config)
    if new and not create:
        require_database(config)

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
    except DATABASE_ERRORS as exc:
        raise click.ClickException(f"database {describe(config.database)}: {exc}") from None
    finally:
        if new and database_exists(config):
            click.echo(f"created database at {os.path.abspath(config.database.path)}", err=True)


def run_with_accounts(
    config: Config, action: Callable[[AccountService], Awaitable[T]], create: bool = False
) -> T:
    async def with_accounts(db: Engine) -> T:
        passwords = PasswordService()
        try:
            return await action(AccountService(db, passwords))
        finally:
            passwords.close()

    return run_with_db(config, with_accounts, create)


def read_password(from_stdin: bool) -> str:
    """One line from stdin with --password-stdin, else a hidden prompt asked twice."""
    if from_stdin:
        line = sys.stdin.readline()
        if not line:
            raise click.ClickException("--password-stdin: nothing on standard input")
        return line.rstrip("\r\n")
    if not sys.stdin.isatty():
        raise click.ClickException("no terminal to ask for a password; use --password-stdin")
    value: str = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    return value
