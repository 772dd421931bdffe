"""`podsync user ...`: account administration."""

from __future__ import annotations

import json
import sys

import click

from podsync import timestamps
from podsync.cli.app_passwords import user_app_passwords
from podsync.cli.base import Context, pass_context, read_password, run_with_accounts
from podsync.errors import InvalidInput
from podsync.services.accounts import check_username
from podsync.services.passwords import check_password_rules


@click.group(short_help="Manage user accounts.")
def user() -> None:
    """Manage user accounts: add, passwd, list, disable, enable, admin, logout, unlock,
    delete, app-passwords, and import-from another server.

    \b
    Example:
      podsync user add alice
      podsync user list --json
      podsync user passwd alice
      podsync user app-passwords alice --create Kasts
    """


user.add_command(user_app_passwords)


_password_stdin = click.option(
    "--password-stdin", is_flag=True, help="Read the password as one line from standard input."
)


@user.command("add")
@click.argument("name")
@_password_stdin
@click.option("--admin", is_flag=True, help="Make the user an admin of the web UI.")
@pass_context
def user_add(ctx: Context, name: str, password_stdin: bool, admin: bool) -> None:
    """Create a user (an admin of the web UI with --admin).

    \b
    Example:
      podsync user add alice --admin
      printf '%s\\n' "$PASSWORD" | podsync user add alice --password-stdin
    """
    try:
        check_username(name)  # before asking for a password
    except InvalidInput as exc:
        raise click.ClickException(str(exc)) from None
    password = read_password(password_stdin)
    try:
        check_password_rules(password)  # before a new database is made for nothing
    except InvalidInput as exc:
        raise click.ClickException(str(exc)) from None
    run_with_accounts(
        ctx.config, lambda accounts: accounts.add_user(name, password, admin), create=True
    )
    click.echo(f"user {name} created" + (" (an admin)" if admin else ""))


@user.command("passwd", short_help="Set a user's password; end their logins.")
@click.argument("name")
@_password_stdin
@pass_context
def user_passwd(ctx: Context, name: str, password_stdin: bool) -> None:
    """Set a user's password and revoke all their tokens and app passwords.

    \b
    Example:
      podsync user passwd alice
    """
    run_with_accounts(ctx.config, lambda accounts: accounts.get_user(name))  # exists?
    password = read_password(password_stdin)
    run_with_accounts(ctx.config, lambda accounts: accounts.set_password(name, password))
    click.echo(f"password of {name} changed; their apps must log in again")


@user.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array instead of a table.")
@pass_context
def user_list(ctx: Context, as_json: bool) -> None:
    """List users: name, state, feeds, created, devices, admin.

    Each row: the name, enabled or disabled, the subscribed feeds, when the user was
    created (RFC 3339), how many gpodder devices the user has, and whether the user
    is a web UI admin (yes or no).

    The table is tab-separated under a header row; --json prints an array of
    {name, enabled, subscriptions, created, devices, admin} ([] when there are no
    users).

    \b
    Example:
      podsync user list
      podsync user list --json | jq -r '.[] | select(.enabled) | .name'
    """
    summaries = run_with_accounts(ctx.config, lambda accounts: accounts.list_users())
    rows = [
        {
            "name": s.name,
            "enabled": s.enabled,
            "subscriptions": s.subscriptions,
            "created": timestamps.format(s.created_at),
            "devices": s.devices,
            "admin": s.admin,
        }
        for s in summaries
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no users yet; add one with: podsync user add NAME")
        return
    click.echo("NAME\tSTATE\tSUBSCRIPTIONS\tCREATED\tDEVICES\tADMIN")
    for row in rows:
        state = "enabled" if row["enabled"] else "disabled"
        admin = "yes" if row["admin"] else "no"
        click.echo(
            f"{row['name']}\t{state}\t{row['subscriptions']}\t{row['created']}"
            f"\t{row['devices']}\t{admin}"
        )


@user.command("disable", short_help="Block a user's logins and end their sessions.")
@click.argument("name")
@pass_context
def user_disable(ctx: Context, name: str) -> None:
    """Block a user's logins and revoke their tokens and app passwords.

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


@user.command("admin")
@click.argument("name")
@click.option("--revoke", is_flag=True, help="Take the admin role away instead.")
@pass_context
def user_admin(ctx: Context, name: str, revoke: bool) -> None:
    """Make a user a web UI admin (its Users page), or not.

    \b
    Example:
      podsync user admin alice
      podsync user admin alice --revoke
    """
    run_with_accounts(ctx.config, lambda accounts: accounts.set_admin(name, not revoke))
    click.echo(f"user {name} is no longer an admin" if revoke else f"user {name} is an admin")


@user.command("logout", short_help="End every login of a user (apps, web UI).")
@click.argument("name")
@pass_context
def user_logout(ctx: Context, name: str) -> None:
    """End every app login, app password and web UI session of a user.

    \b
    Example:
      podsync user logout alice
    """
    run_with_accounts(ctx.config, lambda accounts: accounts.logout(name))
    click.echo(f"every token of {name} revoked")


@user.command("unlock")
@click.argument("name")
@pass_context
def user_unlock(ctx: Context, name: str) -> None:
    """Clear a user's failed-login counters.

    A user throttled by failed logins may log in again at once (an address over
    its own budget across usernames stays throttled until its window passes).

    \b
    Example:
      podsync user unlock alice
    """
    run_with_accounts(ctx.config, lambda accounts: accounts.unlock(name))
    click.echo(f"failed logins of {name} cleared")


@user.command("delete")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_context
def user_delete(ctx: Context, name: str, yes: bool) -> None:
    """Delete a user and all their data.

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
