"""The `podsync` command line: thin commands over the same services the server uses."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from podsync import __version__, timestamps
from podsync.config import Config, ConfigError, load_config
from podsync.db import Database, SchemaTooNew
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


def run_with_db(config: Config, action: Callable[[Database], Awaitable[T]]) -> T:
    """Open (create, migrate) the database, run `action`, close; domain errors -> Error:."""

    async def main() -> T:
        async with Database(config.database.path, config.database.durability) as db:
            return await action(db)

    try:
        return asyncio.run(main())
    except (PodsyncError, SchemaTooNew, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from None


def run_with_accounts(config: Config, action: Callable[[AccountService], Awaitable[T]]) -> T:
    async def with_accounts(db: Database) -> T:
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="podsync", message="%(prog)s %(version)s")
@click.option(
    "--config",
    "config_path",
    envvar="PODSYNC_CONFIG",
    type=click.Path(dir_okay=False),
    help="TOML config file (default: ./podsync.toml when it exists).",
)
@click.pass_context
def cli(ctx: click.Context, config_path: str | None) -> None:
    """podsync: keep podcast subscriptions in sync between your apps.

    \b
    Example:
      podsync user add alice
      podsync serve --port 8080
    """
    ctx.obj = Context(config_path)


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
    from podsync.web.server import configure_logging
    from podsync.web.server import serve as run_server

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
    configure_logging(config.log.level)
    try:
        asyncio.run(run_server(config))
    except (OSError, SchemaTooNew) as exc:
        raise click.ClickException(str(exc)) from None


@cli.group()
def user() -> None:
    """Manage user accounts."""


_password_stdin = click.option(
    "--password-stdin", is_flag=True, help="Read the password as one line from standard input."
)


@user.command("add")
@click.argument("name")
@_password_stdin
@pass_context
def user_add(ctx: Context, name: str, password_stdin: bool) -> None:
    """Create a user.

    \b
    Example:
      podsync user add alice
      printf '%s\\n' "$PASSWORD" | podsync user add alice --password-stdin
    """
    password = read_password(password_stdin)
    run_with_accounts(ctx.config, lambda accounts: accounts.add_user(name, password))
    click.echo(f"user {name} created")


@user.command("passwd")
@click.argument("name")
@_password_stdin
@pass_context
def user_passwd(ctx: Context, name: str, password_stdin: bool) -> None:
    """Set a user's password and revoke all their tokens.

    \b
    Example:
      podsync user passwd alice
    """
    password = read_password(password_stdin)
    run_with_accounts(ctx.config, lambda accounts: accounts.set_password(name, password))
    click.echo(f"password of {name} changed; their apps must log in again")


@user.command("list")
@pass_context
def user_list(ctx: Context) -> None:
    """List users: name, enabled, subscribed feeds, created (RFC 3339).

    \b
    Example:
      podsync user list
    """
    summaries = run_with_accounts(ctx.config, lambda accounts: accounts.list_users())
    for s in summaries:
        state = "enabled" if s.enabled else "disabled"
        click.echo(f"{s.name}\t{state}\t{s.subscriptions}\t{timestamps.format(s.created_at)}")


@user.command("disable")
@click.argument("name")
@pass_context
def user_disable(ctx: Context, name: str) -> None:
    """Block a user's logins and revoke their tokens.

    \b
    Example:
      podsync user disable alice
    """
    run_with_accounts(ctx.config, lambda accounts: accounts.set_enabled(name, False))
    click.echo(f"user {name} disabled")


@user.command("enable")
@click.argument("name")
@pass_context
def user_enable(ctx: Context, name: str) -> None:
    """Allow a disabled user to log in again.

    \b
    Example:
      podsync user enable alice
    """
    run_with_accounts(ctx.config, lambda accounts: accounts.set_enabled(name, True))
    click.echo(f"user {name} enabled")


@user.command("logout")
@click.argument("name")
@pass_context
def user_logout(ctx: Context, name: str) -> None:
    """Revoke every access and refresh token of a user.

    \b
    Example:
      podsync user logout alice
    """
    run_with_accounts(ctx.config, lambda accounts: accounts.logout(name))
    click.echo(f"every token of {name} revoked")


@user.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_context
def user_delete(ctx: Context, name: str, yes: bool) -> None:
    """Delete a user and all their subscriptions.

    \b
    Example:
      podsync user delete alice --yes
    """
    if not yes:
        if not sys.stdin.isatty():
            raise click.ClickException("refusing to delete without --yes (no terminal to ask)")
        if not click.confirm(f"Delete user {name} and all their data?", default=False):
            raise click.ClickException("not deleted")
    run_with_accounts(ctx.config, lambda accounts: accounts.delete_user(name))
    click.echo(f"user {name} deleted")


@cli.group()
def db() -> None:
    """Database maintenance."""


@db.command("migrate")
@pass_context
def db_migrate(ctx: Context) -> None:
    """Bring the database schema to the current version (serve does this too).

    \b
    Example:
      podsync db migrate
    """

    async def version(database: Database) -> int:
        async with database.read() as conn, conn.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    current = run_with_db(ctx.config, version)
    click.echo(f"database {ctx.config.database.path} is at schema version {current}")


def main() -> None:
    cli(prog_name="podsync")
