"""Account administration: create users, change passwords, enable, disable,
revoke tokens, delete. Used by the CLI (and by tests to set up users)."""

from __future__ import annotations

import re

from podsync import timestamps
from podsync.errors import InvalidInput
from podsync.model import User, UserOverview, UserSummary
from podsync.services.passwords import PasswordService, check_password_rules
from podsync.storage.engine import Engine
from podsync.store import Connection, app_passwords, login_failures, tokens, users, web_sessions

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

    async def set_password(self, name: str, password: str) -> None:
        check_password_rules(password)
        password_hash = await self.passwords.hash(password)
        async with self.db.write() as conn:
            user = await users.require_by_name(conn, name)
            await users.set_password_hash(conn, user.id, password_hash)
            await _revoke(conn, user.id)
            await login_failures.clear_name(conn, user.name)

    async def unlock(self, name: str) -> None:
        """Forget the user's failed logins, so a throttled user may log in again."""
        async with self.db.write() as conn:
            user = await users.require_by_name(conn, name)
            await login_failures.clear_name(conn, user.name)

    async def set_enabled(self, name: str, enabled: bool) -> None:
        async with self.db.write() as conn:
            user = await users.require_by_name(conn, name)
            await users.set_enabled(conn, user.id, enabled)
            if not enabled:
                await _revoke(conn, user.id)

    async def logout(self, name: str) -> None:
        async with self.db.write() as conn:
            user = await users.require_by_name(conn, name)
            await _revoke(conn, user.id)

    async def delete_user(self, name: str) -> None:
        async with self.db.write() as conn:
            user = await users.require_by_name(conn, name)
            await users.delete(conn, user.id)

    async def get_user(self, name: str) -> User:
        async with self.db.read() as conn:
            return await users.require_by_name(conn, name)

    async def list_users(self) -> list[UserSummary]:
        async with self.db.read() as conn:
            return await users.list_summaries(conn)

    async def admin_rows(self) -> list[UserOverview]:
        """Every user with counts and last activity (the admin's Users page)."""
        async with self.db.read() as conn:
            return await users.overview(conn)


async def _revoke(conn: Connection, user_id: int) -> None:
    """Every access token (generation), refresh token, web UI session and app password
    of the user stops working."""
    await users.bump_generation(conn, user_id)
    await app_passwords.delete_for_user(conn, user_id)
    await tokens.delete_for_user(conn, user_id)
    await web_sessions.delete_for_user(conn, user_id)
