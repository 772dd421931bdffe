"""Who HTTP Basic credentials prove, for every API that takes them (gpodder,
Nextcloud): an app password first when the password has an app password's shape
(one indexed lookup, no argon2), else the account password.

A verified account password is remembered for `cache_seconds` under an HMAC of user
and password, so Kasts' Basic on every call costs one argon2 hash per few minutes,
not one per request; every hit re-reads the user, so a revocation ends it at once.
App passwords are never cached: their check is as cheap as a cache hit, and
revoking one must end it at once.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import OrderedDict

from podsync.model import Caller, User
from podsync.services.app_passwords import (
    AppPasswordService,
    BasicLogin,
    looks_like_app_password,
)
from podsync.services.auth import AuthService
from podsync.storage.engine import Engine
from podsync.store import users

MAX_CACHED = 10_000

__all__ = ["BasicAuth", "BasicLogin"]


class BasicAuth:
    def __init__(
        self,
        db: Engine,
        auth: AuthService,
        app_passwords: AppPasswordService,
        secret_key: str,
        cache_seconds: int,
    ) -> None:
        self.db = db
        self.auth = auth
        self.app_passwords = app_passwords
        self.cache_seconds = cache_seconds
        self._secret = secret_key.encode("utf-8", "surrogatepass")
        # HMAC(user, password) -> (user id, generation, trusted until [monotonic s])
        self._verified: OrderedDict[bytes, tuple[int, int, float]] = OrderedDict()

    async def authenticate_basic(self, name: str, password: str, caller: Caller) -> BasicLogin:
        """The login these credentials prove, under the login throttle: Unauthorized,
        TooManyRequests or Unavailable as a login would be refused."""
        app_password_shaped = looks_like_app_password(password)
        if app_password_shaped:
            # No guess finds an app password: past the bound on guesses at the name,
            # an app password still signs in, from anywhere.
            await self.auth.throttle_check(name, caller.address, name_bound=False)
            login = await self.app_passwords.find_login(name, password)
            if login is not None:
                await self.auth.throttle.note_success(name, caller.address)
                return login
        user = await self._account_password(name, password, caller, app_password_shaped)
        return BasicLogin(user, None)

    def _key(self, name: str, password: str) -> bytes:
        text = f"{name}\x00{password}".encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, text, hashlib.sha256).digest()

    async def _account_password(
        self, name: str, password: str, caller: Caller, app_password_shaped: bool
    ) -> User:
        key = self._key(name, password)
        cached = self._verified.get(key)
        if cached is not None and cached[2] > time.monotonic():
            # Throttle first, as a login would: a locked-out pair stays locked out.
            await self.auth.throttle_check(name, caller.address)
            async with self.db.read() as conn:
                user = await users.get_by_id(conn, cached[0])
            if user is not None and user.enabled and user.token_generation == cached[1]:
                return user
        self._verified.pop(key, None)
        user = await self.auth.verify_credentials(
            name, password, caller, app_password_shaped=app_password_shaped
        )
        if self.cache_seconds > 0:
            until = time.monotonic() + self.cache_seconds
            self._verified[key] = (user.id, user.token_generation, until)
            while len(self._verified) > MAX_CACHED:
                self._verified.popitem(last=False)
        return user
