"""`podsync db ...`: migrate, online backup, integrity check."""

from __future__ import annotations

import click

from podsync.cli.base import Context, pass_context, run_with_db
from podsync.db import Database


@click.group()
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
