"""What every command shares: the lazily loaded config, running a coroutine on the
database, reading a password, turning domain errors into `Error: ...` lines."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import click

from podsync.config import Config, ConfigError, load_config
from podsync.db import SchemaTooNew
from podsync.engine import DATABASE_ERRORS, Engine, create_engine, describe
from podsync.errors import PodsyncError
from podsync.services.accounts import AccountService
from podsync.services.passwords import PasswordService

T = TypeVar("T")


@dataclass
class Context:
    config_path: str | None
    _config: Config | None = None

    @property
    def config(self) -> Config:
        if self._config is None:
            try:
                self._config = load_config(self.config_path)
            except ConfigError as exc:
                raise click.ClickException(f"configuration: {exc}") from None
        return self._config


pass_context = click.make_pass_decorator(Context)


def run_with_db(config: Config, action: Callable[[Engine], Awaitable[T]]) -> T:
    """Open (create, migrate) the database, run `action`, close; domain errors -> Error:."""

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


def run_with_accounts(config: Config, action: Callable[[AccountService], Awaitable[T]]) -> T:
    async def with_accounts(db: Engine) -> T:
        passwords = PasswordService()
        try:
            return await action(AccountService(db, passwords))
        finally:
            passwords.close()

    return run_with_db(config, with_accounts)


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
