"""Who is calling the gpodder layer (gpodder spec section 3): Basic credentials or a
signed session cookie.

The cookie carries the user id, the user's token generation (so `passwd`, `logout`
and `disable` end it, as they end OPA tokens) and a random session id (the key of the
served-cursor memory, and what `logout.json` revokes: in the database, so that every
process refuses it and a restart does not bring it back). A cookie made on an app
password names it too, so revoking that app password ends the cookie as well.

Basic credentials are checked by `services/basic_auth.py` (app passwords, then the
account password with its cache), shared with the Nextcloud API.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, URLSafeTimedSerializer

from podsync import timestamps
from podsync.config import GpodderConfig
from podsync.errors import Unauthorized
from podsync.model import Caller, User
from podsync.services.app_passwords import BasicLogin
from podsync.services.auth import AuthService
from podsync.services.basic_auth import BasicAuth
from podsync.storage.engine import Engine
from podsync.store import app_passwords, sessions, users

SESSION_SALT = "podsync.gpodder-session"
MAX_CACHED = 10_000
BAD_SESSION = "session cookie is invalid, expired or revoked; send Basic credentials"


@dataclass(frozen=True)
class Session:
    user: User
    session_id: str
    issued_at: int  # whole seconds (itsdangerous' own resolution)
    app_password_id: int | None = None  # the app password the login used, if any


class GpodderAuth:
    def __init__(
        self,
        db: Engine,
        auth: AuthService,
        secret_key: str,
        config: GpodderConfig,
        basic: BasicAuth,
    ) -> None:
        self.db = db
        self.auth = auth
        self.config = config
        self.basic = basic
        self._serializer = URLSafeTimedSerializer(secret_key, salt=SESSION_SALT)
        # cookie -> (user id, generation, session id, issued at, app password id):
        # signatures verified
        self._cookies: OrderedDict[str, tuple[int, int, str, int, int | None]] = OrderedDict()

    def issue_cookie(
        self, user: User, session_id: str | None = None, app_password_id: int | None = None
    ) -> tuple[str, str]:
        """(cookie value, session id): a new session, or a fresh cookie for `session_id`.
        `app_password_id`: the login used that app password; revoking it ends the cookie."""
        sid = session_id or secrets.token_urlsafe(12)
        payload: dict[str, Any] = {"u": user.id, "g": user.token_generation, "s": sid}
        if app_password_id is not None:
            payload["a"] = app_password_id
        return self._serializer.dumps(payload), sid

    async def from_cookie(self, value: str) -> Session:
        """The session a cookie proves; Unauthorized when it is not valid now."""
        user_id, generation, session_id, issued_at, app_password_id = self._verify_cookie(value)
        async with self.db.read() as conn:
            user = await users.get_by_id(conn, user_id)
            revoked = user is not None and await sessions.is_revoked(conn, session_id)
            if user is not None and not revoked and app_password_id is not None:
                revoked = not await app_passwords.exists(conn, user_id, app_password_id)
        if user is None or revoked or not user.enabled or user.token_generation != generation:
            raise Unauthorized(BAD_SESSION)
        return Session(user, session_id, issued_at, app_password_id)

    def _verify_cookie(self, value: str) -> tuple[int, int, str, int, int | None]:
        """(user id, generation, session id, issued at, app password id) of a cookie
        whose signature is good and which has not expired. A verified cookie is
        remembered (an app sends the same one on every call; the signature check was
        half the CPU of a poll); its age is checked on every call, and the user,
        generation, revocation and app password are read by the caller every time."""
        cached = self._cookies.get(value)
        if cached is None:
            cached = self._check_signature(value)
            self._cookies[value] = cached
            while len(self._cookies) > MAX_CACHED:
                self._cookies.popitem(last=False)
        # itsdangerous' own test: whole seconds of age, from 0 to the lifetime
        if not 0 <= int(time.time()) - cached[3] <= self.config.session_lifetime:
            raise Unauthorized(BAD_SESSION)
        return cached

    def _check_signature(self, value: str) -> tuple[int, int, str, int, int | None]:
        if not value.isascii():
            raise Unauthorized(BAD_SESSION)
        try:
            payload: Any
            payload, issued = self._serializer.loads(
                value, max_age=self.config.session_lifetime, return_timestamp=True
            )
        except BadSignature:  # SignatureExpired included
            raise Unauthorized(BAD_SESSION) from None
        if (
            not isinstance(payload, dict)
            or type(payload.get("u")) is not int
            or type(payload.get("g")) is not int
            or not isinstance(payload.get("s"), str)
            or type(payload.get("a", 0)) is not int
        ):
            raise Unauthorized(BAD_SESSION)
        return (
            payload["u"],
            payload["g"],
            payload["s"],
            int(issued.timestamp()),
            payload.get("a"),
        )

    def needs_refresh(self, session: Session) -> bool:
        """A sliding session: re-issue the cookie once it is a tenth of its life old."""
        return time.time() - session.issued_at > max(1, self.config.session_lifetime // 10)

    async def revoke_session(self, session_id: str) -> None:
        """End a session on every process, for good: its cookies are refused until
        the newest of them would have expired (each refresh restarts the lifetime)."""
        expires_at = timestamps.now_us() + self.config.session_lifetime * 1_000_000
        async with self.db.write() as conn:
            await sessions.revoke(conn, session_id, expires_at)

    async def login_basic(self, username: str, password: str, caller: Caller) -> BasicLogin:
        """The login these Basic credentials prove (an app password or the account
        password), under the login throttle."""
        return await self.basic.authenticate_basic(username, password, caller)

    async def from_basic(self, username: str, password: str, caller: Caller) -> User:
        """The user these Basic credentials prove, under the login throttle."""
        return (await self.login_basic(username, password, caller)).user
