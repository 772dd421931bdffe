"""`podsync user import-from`: bring an account's history from another server."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from podsync.cli.base import Context, pass_context, run_with_accounts, run_with_services
from podsync.config.envvars import IMPORT_PASSWORD_ENV
from podsync.services.compose.rare import RareServices
from podsync.services.remote_import import RemoteAccount
from podsync.services.remote_import.client import APIS, base_url
from podsync.services.remote_import.jobs import ImportJob, ImportJobs


@click.command("import-from", short_help="Import subscriptions and history from another server.")
@click.argument("name")
@click.argument("url")
@click.option("--username", "remote_user", required=True, help="Your user name on that server.")
@click.option(
    "--api",
    type=click.Choice(APIS),
    help="The API that server speaks (detected when left out).",
)
@click.option(
    "--password-stdin",
    is_flag=True,
    help="Read that server's password as one line from standard input.",
)
@pass_context
def import_from(
    ctx: Context, name: str, url: str, remote_user: str, api: str | None, password_stdin: bool
) -> None:
    """Import NAME's subscriptions and every episode action (plays, positions,
    downloads, deletions) from the account REMOTE_USER on the server at URL.

    URL is the other server's address: gpodder.net, oPodSync, mygpo, another
    podsync, ... (the gpodder API), or a Nextcloud with GPodder Sync (the
    Nextcloud API). Subscriptions of every device come along, except feeds you
    unsubscribed there; each episode action keeps its own time, so the newest
    position wins whichever server it was made on.

    The password of that server comes from one line of standard input with
    --password-stdin, else $PODSYNC_IMPORT_PASSWORD, else a hidden prompt; never
    the command line. Running the import again adds nothing; an import that stopped
    half way is completed by running it again.

    \b
    Example:
      podsync user import-from alice https://gpodder.net --username alice42
      printf '%s\\n' "$APP_PASSWORD" | podsync user import-from alice \\
          https://cloud.example.org --username alice --api nextcloud --password-stdin
    """
    try:
        base_url(url)
    except ValueError as exc:
        raise click.ClickException(f"{url}: {exc}") from None
    run_with_accounts(ctx.config, lambda accounts: accounts.get_user(name))  # before asking
    password = _remote_password(password_stdin, remote_user)
    account = RemoteAccount(url, remote_user, password, api)  # type: ignore[arg-type]
    config = ctx.config

    def say(text: str) -> None:
        click.echo(text, err=True)

    async def run(services: RareServices) -> ImportJob:
        jobs = services.import_jobs
        user = await services.opml.require_user(name)
        with _stopped_by_signals(jobs):
            return await jobs.run_here(user, account, allow_private=True, say=say)

    try:
        job = run_with_services(config, run)
    except asyncio.CancelledError:
        raise click.ClickException("stopped before the import began; nothing was changed") from None
    assert job.report is not None
    for line in job.report.lines():
        click.echo(line)
    if not job.report.complete:
        sys.exit(1)


@contextmanager
def _stopped_by_signals(jobs: ImportJobs) -> Iterator[None]:
    """SIGTERM and SIGINT stop the import, which then writes and prints its report;
    before it began (the sign-in), they end the command at once."""
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()

    def stop(said: str) -> None:
        if jobs.running_here():
            jobs.stop_all(said)
        elif main is not None:
            main.cancel(said)

    signals = ((signal.SIGTERM, "stopped by SIGTERM"), (signal.SIGINT, "stopped by Ctrl-C"))
    for sig, said in signals:
        loop.add_signal_handler(sig, stop, said)
    try:
        yield
    finally:
        for sig, _said in signals:
            loop.remove_signal_handler(sig)


def _remote_password(from_stdin: bool, remote_user: str) -> str:
    if from_stdin:
        line = sys.stdin.readline()
        if not line:
            raise click.ClickException("--password-stdin: nothing on standard input")
        return line.rstrip("\r\n")
    from_environment = os.environ.get(IMPORT_PASSWORD_ENV)
    if from_environment:
        return from_environment
    if not sys.stdin.isatty():
        raise click.ClickException(
            f"no terminal to ask for the password; set {IMPORT_PASSWORD_ENV} "
            "or use --password-stdin"
        )
    value: str = click.prompt(f"Password of {remote_user} on that server", hide_input=True)
    return value
