"""A revocation that lands while a login is verifying its password wins."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from podsync.config import Config
from podsync.errors import Unauthorized
from podsync.model import Caller
from podsync.services.accounts import AccountService
from podsync.services.auth import AuthService
from podsync.services.passwords import PasswordService
from podsync.storage.sqlite import Database
from tests.conftest import PASSWORD, TEST_MEMORY_KIB, TEST_TIME_COST, cheap_passwords

Revoke = Callable[[AccountService], Awaitable[Any]]


class RevokingPasswords(PasswordService):
    """Verifies for real, then lets an admin act before the login writes its token."""

    def __init__(self, revoke: Revoke, accounts: Callable[[], AccountService]) -> None:
        super().__init__(memory_kib=TEST_MEMORY_KIB, time_cost=TEST_TIME_COST)
        self.revoke = revoke
        self.accounts = accounts

    async def verify(self, password_hash: str | None, password: str) -> bool:
        ok = await super().verify(password_hash, password)
        await self.revoke(self.accounts())
        return ok


@pytest.mark.parametrize(
    "revoke",
    [
        lambda accounts: accounts.set_password("alice", "a brand new password"),
        lambda accounts: accounts.set_enabled("alice", False),
        lambda accounts: accounts.logout("alice"),
        lambda accounts: accounts.delete_user("alice"),
    ],
    ids=["passwd", "disable", "logout", "delete"],
)
async def test_a_login_racing_a_revocation_gets_no_token(
    config: Config, create_user: Any, revoke: Revoke
) -> None:
    user = await create_user("alice")
    async with Database(config.database.path) as db:
        plain = cheap_passwords()
        passwords = RevokingPasswords(revoke, lambda: AccountService(db, plain))
        try:
            auth = AuthService(db, config.auth, "a-secret-key-for-this-test", passwords)
            with pytest.raises(Unauthorized):
                await auth.login("alice", PASSWORD, Caller("127.0.0.1", "opa"))
            async with db.read() as conn:
                row = await conn.fetch_one(
                    "SELECT count(*) FROM refresh_tokens WHERE user_id = ?", (user.id,)
                )
            assert row is not None and row[0] == 0
        finally:
            passwords.close()
            plain.close()
