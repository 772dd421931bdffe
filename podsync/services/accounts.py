"""Account administration: create users, change passwords, enable, disable,
revoke tokens, delete. Used by the CLI (and by tests to set up users)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from podsync import timestamps, zones
from podsync.errors import InvalidInput
from podsync.model import User, UserOverview, UserSummary
from podsync.services.passwords import PasswordService, check_password_rules
from podsync.storage.engine import Engine
from podsync.store import (
    Connection,
    app_passwords,
    login_failures,
    login_flows,
    login_successes,
    meta,
    tokens,
    users,
    web_sessions,
)

USERNAME = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)


def check_username(name: str) -> None:
    if not USERNAME.fullmatch(name):
        raise InvalidInput(
            f"invalid username {name!r}: use 1 to 64 characters of A-Z a-z 0-9 . _ -"
        )


class AccountService:
    def __init__(self, db: Engine, passwords: PasswordService) -> None:
        self.db = db
        self.passwords = passwords

    async def add_user(self, name: str, password: str, admin: bool = False) -> User:
        check_username(name)
        check_password_rules(password)
        password_hash = await self.passwords.hash(password)
        async with self.db.write() as conn:
            return await users.create(conn, name, password_hash, timestamps.now_us(), admin)

    async def set_admin(self, name: str, admin: bool) -> None:
        """Make the user an admin of the web UI, or no longer one."""
        async with self.db.write() as conn:
            user = await users.require_by_name(conn, name)
            await users.set_admin(conn, user.id, admin)

    @asynccontextmanager
    async def _write_of(self, name: str) -> AsyncIterator[tuple[Connection, User]]:
        """A write of the user called `name` (NotFound when there is none), opened
        for that user (`Engine.write(user=)`), as every write that takes a user's
        lock is: the user is found first, and again inside the write, where a
        user deleted and made anew under the same name meanwhile is found again."""
        async with self.db.read() as conn:
            user_id = (await users.require_by_name(conn, name)).id
        while True:
            async with self.db.write(user=user_id) as conn:
                user = await users.require_by_name(conn, name)
                if user.id == user_id:
                    yield conn, user
                    return
            user_id = user.id

    async def set_password(self, name: str, password: str) -> None:
        check_password_rules(password)
        password_hash = await self.passwords.hash(password)
        async with self._write_of(name) as (conn, user):
            await users.set_password_hash(conn, user.id, password_hash)
            await end_every_login(conn, user.id)
            await login_failures.clear_name(conn, user.name)

    async def unlock(self, name: str) -> None:
        """Forget the user's failed logins, so a throttled user may log in again."""
        async with self.db.write() as conn:
            user = await users.require_by_name(conn, name)
            await login_failures.clear_name(conn, user.name)

    async def set_enabled(self, name: str, enabled: bool) -> None:
        async with self._write_of(name) as (conn, user):
            await users.set_enabled(conn, user.id, enabled)
            if not enabled:
                await end_every_login(conn, user.id)

    async def logout(self, name: str) -> None:
        async with self._write_of(name) as (conn, user):
            await end_every_login(conn, user.id)

    async def delete_user(self, name: str) -> None:
        # Threaded: the cascade deletes the person's whole history (0.6 s at 200,000
        # plays on a 2-core test machine), which would hold every other request.
        async with self.db.write(threaded=True) as conn:
            user = await users.require_by_name(conn, name)
            await users.delete(conn, user.id)
            await login_successes.clear_name(conn, user.name)

    async def set_time_zone(self, user: User, name: str) -> str | None:
        """The zone the web UI shows this user's times in: an IANA name in any letter
        case (stored as the zone database spells it), or empty for the server's.
        InvalidInput names the problem. Returns what was stored."""
        spelled = checked_time_zone(name)
        async with self.db.write() as conn:
            await users.set_time_zone(conn, user.id, spelled)
        return spelled

    async def get_user(self, name: str) -> User:
        async with self.db.read() as conn:
            return await users.require_by_name(conn, name)

    async def list_users(self) -> list[UserSummary]:
        async with self.db.read() as conn:
            return await users.list_summaries(conn)

    async def admin_rows(self) -> list[UserOverview]:
        """Every user with counts and last activity (the admin's Users page). On a
        worker thread: the counts read every subscription of the server (21 ms at 200
        people of 1,000 on a 2-core test machine), holding every other request."""
        async with self.db.read(threaded=True) as conn:
            return await users.overview(conn)

    async def admin_row(self, name: str) -> UserOverview | None:
        """One user's row of the admin's Users page (their own page), or None. Their
        counts alone, on a worker thread as the Overview's are."""
        async with self.db.read(threaded=True) as conn:
            found = await users.overview(conn, name)
        return found[0] if found else None


# What "end every login" ends: the one list behind a password change (web UI, admin
# page, `user passwd`), "Sign out everywhere", `user logout` and `user disable` (the
# admin page's Disable too); `user delete` cascades to the same rows. A new way to
# log in joins this list, and tests/nextcloud/test_every_login_ends.py tries each path on it.
ENDS_WITH_EVERY_LOGIN: tuple[tuple[str, Callable[[Connection, int], Awaitable[Any]]], ...] = (
    # Access tokens and gpodder session cookies carry the generation.
    ("access tokens and gpodder sessions", users.bump_generation),
    ("refresh tokens", tokens.delete_for_user),
    ("web UI sessions", web_sessions.delete_for_user),
    ("app passwords", app_passwords.delete_for_user),
    # A Login Flow granted but not yet polled: a credential waiting to be handed out.
    ("granted Login Flows", login_flows.end_granted_for_user),
)


async def end_every_login(conn: Connection, user_id: int) -> None:
    """Everything in ENDS_WITH_EVERY_LOGIN stops working for the user. Call inside
    the write that makes the change. Takes the user's lock first, as every write
    that issues a credential does (`services.auth.require_unchanged`): on
    PostgreSQL one that checked the user before this commits would otherwise write
    its credential after the list was ended."""
    await meta.lock_user(conn, user_id)
    for _what, end in ENDS_WITH_EVERY_LOGIN:
        await end(conn, user_id)


def checked_time_zone(name: str) -> str | None:
    """A time zone as the zone database spells it (None: empty, the server's);
    InvalidInput naming the problem for a name it does not know."""
    name = name.strip()
    spelled = zones.spelled_as_known(name) if name else None
    if name and spelled is None:
        shown = name if len(name) <= zones.MAX_NAME else name[: zones.MAX_NAME] + "…"
        raise InvalidInput(
            f"“{shown}” is not a time zone this server knows. Use a name such as "
            "Europe/Berlin or America/New_York, or leave it empty for the server's."
        )
    return spelled
