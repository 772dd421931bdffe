"""`podsync user app-passwords NAME`: list, make and revoke a user's app passwords."""

from __future__ import annotations

import json

import click

from podsync import timestamps
from podsync.cli.base import Context, pass_context, run_with_services
from podsync.model import AppPassword
from podsync.services.compose.rare import RareServices


def _when(us: int | None) -> str:
    return "never" if us is None else timestamps.format_seconds(us) + "Z"


@click.command("app-passwords")
@click.argument("name")
@click.option("--create", "create", metavar="LABEL", help="Make an app password named LABEL.")
@click.option(
    "--revoke", "revoke", metavar="LABEL_OR_ID", help="End the app password with this name or id."
)
@click.option("--json", "as_json", is_flag=True, help="List as a JSON array instead of a table.")
@pass_context
def user_app_passwords(
    ctx: Context, name: str, create: str | None, revoke: str | None, as_json: bool
) -> None:
    """List, make or revoke a user's app passwords.

    An app password is a random password for one app (gPodder, Kasts, an app of
    the Nextcloud family): type it in the app instead of the account password.
    It works for syncing only, never to sign in to the web UI. --create prints it
    once, on standard output; only a hash is kept, so it cannot be shown again.
    A password change, `user logout` and `user disable` end them all.

    Without an option: a tab-separated table of ID, NAME, CREATED and LAST USED
    (times in UTC; LAST USED is recorded at most once a minute).

    \b
    Example:
      podsync user app-passwords alice
      podsync user app-passwords alice --create "Kasts on the laptop"
      podsync user app-passwords alice --revoke "Kasts on the laptop"
      podsync user app-passwords alice --revoke 7
    """
    if create is not None and revoke is not None:
        raise click.UsageError("give --create or --revoke, not both")

    async def run(
        services: RareServices,
    ) -> tuple[list[AppPassword], AppPassword | None, str | None]:
        user = await services.accounts.get_user(name)
        service = services.core.app_passwords
        if create is not None:
            made, secret = await service.create(user, create)
            return [], made, secret
        if revoke is not None:
            return [], await service.revoke(user, revoke), None
        return await service.list(user), None, None

    listed, one, secret = run_with_services(ctx.config, run, password_threads=1)
    if secret is not None and one is not None:
        click.echo(
            f"app password {one.name!r} (id {one.id}) made for {name}; it is shown only now:",
            err=True,
        )
        click.echo(secret)
        return
    if one is not None:
        click.echo(f"app password {one.name!r} (id {one.id}) of {name} revoked")
        return
    if as_json:
        rows = [
            {
                "id": p.id,
                "name": p.name,
                "created": timestamps.format(p.created_at),
                "last_used": None if p.last_used_at is None else timestamps.format(p.last_used_at),
            }
            for p in listed
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    if not listed:
        click.echo(f"{name} has no app passwords; make one with --create LABEL")
        return
    click.echo("ID\tNAME\tCREATED\tLAST USED")
    for p in listed:
        click.echo(f"{p.id}\t{p.name}\t{_when(p.created_at)}\t{_when(p.last_used_at)}")
