"""`podsync db ...`: migrate, online backup, integrity check."""

from __future__ import annotations

import os
import sqlite3
import sys
from dataclasses import replace

import click

from podsync.cli.base import Context, pass_context, require_database, run_with_db
from podsync.config import describe_database
from podsync.config.database_url import problem as url_problem
from podsync.config.envvars import COPY_TO_URL_ENV
from podsync.errors import PodsyncError
from podsync.services import copying
from podsync.storage import maintenance
from podsync.storage.engine import Engine, create_engine
from podsync.storage.errors import database_errors, redact
from podsync.store import meta


@click.group()
def db() -> None:
    """Database maintenance: migrate, backup, check, copy-to PostgreSQL.

    \b
    Example:
      podsync db migrate
      podsync db backup /var/backups/podsync.db
      podsync db check
    """


@db.command("migrate", short_help="Bring the schema to the current version.")
@pass_context
def db_migrate(ctx: Context) -> None:
    """Bring the database schema to the current version (serve does this too).

    \b
    Example:
      podsync db migrate
    """

    async def version(database: Engine) -> int:
        async with database.read() as conn:
            return await meta.schema_version(conn)

    current = run_with_db(ctx.config, version, create=True)
    click.echo(f"database {describe_database(ctx.config)} is at schema version {current}")


@db.command("backup", short_help="Copy the database while the server runs.")
@click.argument("dest", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Overwrite DEST when it exists.")
@pass_context
def db_backup(ctx: Context, dest: str, force: bool) -> None:
    """Copy the database to DEST, consistently, while the server keeps running.

    DEST is one self-contained SQLite file. An existing DEST is refused unless
    --force is given.

    \b
    Example:
      podsync db backup /var/backups/podsync-$(date +%F).db
    """
    config = ctx.config
    _sqlite_only(config.database.url, "backup", "pg_dump")
    # Migrate first, so the copy has the current schema; never create a database.
    run_with_db(config, _noop)
    try:
        size = maintenance.backup(config.database.path, dest, force)
    except PodsyncError as exc:
        raise click.ClickException(str(exc)) from None
    except (sqlite3.Error, OSError) as exc:
        raise click.ClickException(f"backup to {dest} failed: {exc}") from None
    click.echo(f"backup of {config.database.path} written to {dest} ({size} bytes)")


@db.command("copy-to", short_help="Copy this SQLite database into an empty PostgreSQL one.")
@click.argument("url", required=False)
@pass_context
def db_copy_to(ctx: Context, url: str | None) -> None:
    """Copy this SQLite database into an empty PostgreSQL one.

    Everything goes to the empty PostgreSQL database at URL: users, password hashes,
    tokens, the secret key, subscriptions, action ids, gpodder devices, episode
    actions and URL aliases move as they are, so clients stay logged in and see the
    same lists. Stop the server first (the copy is one snapshot; later writes would
    not move), then set database.url to URL and start it again.

    A password on the command line shows in `ps` and the shell history: leave URL
    out, and podsync takes it from $PODSYNC_COPY_TO_URL, or else asks for it at a
    prompt that does not echo what is typed.

    \b
    Example:
      podsync db copy-to
      PostgreSQL URL (not shown): postgresql://podsync:secret@db.example.org/podsync
    \b
      set -a; . /root/podsync-copy.env; set +a   # PODSYNC_COPY_TO_URL=postgresql://...
      podsync db copy-to
    """
    config = ctx.config
    if config.database.url:
        raise click.ClickException(
            "db copy-to reads the SQLite database (database.path); database.url is set"
        )
    url = _copy_to_url(url)
    wrong = url_problem(url)
    if wrong is not None:
        raise click.ClickException(f"the target URL {wrong}")
    target_config = replace(config.database, url=url)

    async def copy(source: Engine) -> dict[str, int]:
        target = create_engine(target_config)
        try:
            await target.open()
        except database_errors() as exc:  # else the message would name the SQLite source
            raise PodsyncError(f"target database {redact(url)}: {exc}") from None
        try:
            return await copying.copy_database(source, target)
        finally:
            await target.close()

    counts = run_with_db(config, copy)
    summary = ", ".join(f"{n} {table}" for table, n in counts.items())
    click.echo(f"copied {config.database.path} to {redact(url)}: {summary}")


def _copy_to_url(given: str | None) -> str:
    """The argument, else $PODSYNC_COPY_TO_URL, else what is typed at a hidden prompt."""
    if given:
        if redact(given) != given:
            click.echo(
                f"Warning: a password on the command line shows in ps and the shell "
                f"history; leave URL out to give it in {COPY_TO_URL_ENV} or at a prompt",
                err=True,
            )
        return given
    from_environment = os.environ.get(COPY_TO_URL_ENV, "").strip()
    if from_environment:
        return from_environment
    if not sys.stdin.isatty():
        raise click.ClickException(
            f"no target URL: give it as an argument, in {COPY_TO_URL_ENV}, "
            "or at the prompt (which needs a terminal)"
        )
    typed: str = click.prompt("PostgreSQL URL (not shown)", hide_input=True, err=True)
    return typed.strip()


def _sqlite_only(url: str, command: str, instead: str) -> None:
    """`db backup` and `db check` work on the SQLite file (contract section 13)."""
    if url:
        raise click.ClickException(
            f"db {command} is a SQLite command; on PostgreSQL use {instead} instead"
        )


async def _noop(database: Engine) -> None:
    return None


@db.command("check", short_help="Check integrity; exit 1 when damaged.")
@pass_context
def db_check(ctx: Context) -> None:
    """Check the database's integrity, foreign keys and kept counts; exit 1 if damaged.

    Never creates or migrates the database: a missing file is an error.

    \b
    Example:
      podsync db check && echo healthy
    """
    _sqlite_only(ctx.config.database.url, "check", "amcheck (pg_amcheck)")
    path = ctx.config.database.path
    require_database(ctx.config)
    try:
        report = maintenance.check(path)
    except PodsyncError as exc:
        raise click.ClickException(str(exc)) from None
    except sqlite3.Error as exc:
        raise click.ClickException(f"database {path} is damaged or not a database: {exc}") from None
    if not report.ok:
        for problem in report.problems:
            click.echo(problem, err=True)
        raise click.ClickException(f"database {path} is damaged")
    click.echo(f"database {path} is ok (schema version {report.schema_version})")
