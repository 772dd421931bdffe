"""Logins, access tokens and refresh tokens (contract section 3).

Access tokens are itsdangerous-signed (purpose in the salt) and carry the user id
and the user's token generation; bumping the generation revokes them all at once.
Refresh tokens are 256-bit random strings stored only as SHA-256 hashes.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import time
from dataclasses import dataclass

from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from podsync import timestamps
from podsync.config import AuthConfig
from podsync.errors import TooManyRequests, Unauthorized, Unavailable
from podsync.model import Caller, User
from podsync.services.accounts import USERNAME
from podsync.services.passwords import PasswordService
from podsync.services.throttle import LoginThrottle
from podsync.storage.engine import Engine
from podsync.store import Connection, meta, tokens, users

ACCESS_SALT = "podsync.access-token"
SECRET_META_KEY = "secret_key"
BAD_CREDENTIALS = "username or password is incorrect"
BAD_TOKEN = "access token is missing, invalid, expired or revoked"
BAD_REFRESH = "refresh token is invalid, expired or revoked; log in again"
EXPIRED_TOKEN = "access token has expired; refresh it"
# Access tokens whose signature was checked, remembered so that a client's next
# requests skip the HMAC and the decoding (~25 µs of a ~150 µs request). Only the
# signature check is remembered: the user row is still read on every request, so a
# revocation (another generation, a disabled or deleted user) ends the token at once.
VERIFIED_TOKENS = 4096
PENDING_LOGINS = "too many logins are being checked at once; try again in a moment"
# Characters of a name that a log line shows as they are; any other (a space, a
# newline, "from") is escaped, so a name cannot forge a second address for fail2ban.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]", re.ASCII)
LOGGED_NAME_MAX = 64

log = logging.getLogger("podsync.auth")


def loggable_name(name: str) -> str:
    """A client-sent name as one token for a log line: escaped, cut to 64 characters."""
    shown = "".join(_escaped(ch) for ch in name[:LOGGED_NAME_MAX])
    return shown + ("..." if len(name) > LOGGED_NAME_MAX else "")


def _escaped(ch: str) -> str:
    if _PLAIN_NAME.fullmatch(ch):
        return ch
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


@dataclass(frozen=True)
class LoginResult:
    access_token: str
    expires_in: int
    refresh_token: str
    refresh_expires: int  # microseconds since the epoch


def hash_refresh_token(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


async def load_secret_key(db: Engine, configured: str) -> str:
    """The configured secret, else the one kept in the database (made on first start)."""
    if configured:
        return configured
    async with db.read() as conn:
        stored = await meta.get(conn, SECRET_META_KEY)
    if stored is not None:
        return stored
    async with db.write() as conn:
        return await meta.put_if_absent(conn, SECRET_META_KEY, secrets.token_urlsafe(48))


async def require_unchanged(conn: Connection, user: User) -> None:
    """Unauthorized unless `user` is still enabled with the same password and token
    generation. Call inside the write that issues a credential: the password was
    checked against a row read before hashing (~0.1 s), and if an admin changed the
    password, disabled, logged out or deleted the user since, a credential written
    now would outlive that revocation. Takes the user's lock first, so a `user
    delete` running meanwhile either comes before (then Unauthorized) or waits."""
    await meta.lock_user(conn, user.id)
    current = await users.get_by_id(conn, user.id)
    if current is None or (
        not current.enabled
        or current.token_generation != user.token_generation
        or current.password_hash != user.password_hash
    ):
        raise Unauthorized(BAD_CREDENTIALS)


class AuthService:
    def __init__(
        self,
        db: Engine,
        config: AuthConfig,
        secret_key: str,
        passwords: PasswordService,
        max_pending: int | None = None,
    ) -> None:
        """`max_pending`: logins waiting for their verification at once, past which
        one is refused (default `auth.max_pending_logins`; a worker's share of it)."""
        self.db = db
        self.config = config
        self.passwords = passwords
        self.max_pending = config.max_pending_logins if max_pending is None else max_pending
        self._serializer = URLSafeTimedSerializer(secret_key, salt=ACCESS_SALT)
        # token -> (user id, generation, wall-clock second it stops being valid)
        self._verified: dict[str, tuple[int, int, int]] = {}
        self.throttle = LoginThrottle(db, config, secret_key)
        self._pending = 0  # logins between the throttle check and their verification's end

    def issue_access_token(self, user: User) -> str:
        return self._serializer.dumps({"u": user.id, "g": user.token_generation})

    async def login(self, username: str, password: str, caller: Caller) -> LoginResult:
        user = await self.verify_credentials(username, password, caller)
        refresh = secrets.token_urlsafe(32)
        now = timestamps.now_us()
        expires = now + self.config.refresh_token_lifetime * 1_000_000
        new_hash = (
            await self.passwords.hash(password)
            if self.passwords.needs_rehash(user.password_hash)
            else None
        )
        async with self.db.write(user=user.id) as conn:
            await require_unchanged(conn, user)
            await tokens.add(conn, hash_refresh_token(refresh), user.id, expires, now)
            await tokens.delete_expired(conn, now)
            if new_hash is not None:
                await users.set_password_hash(conn, user.id, new_hash)
        return LoginResult(
            access_token=self.issue_access_token(user),
            expires_in=self.config.access_token_lifetime,
            refresh_token=refresh,
            refresh_expires=expires,
        )

    async def _verify(self, username: str, password: str) -> tuple[User | None, bool]:
        user = None
        # A name no account can have (a lone surrogate would even break the SQLite
        # query) is an unknown user: same dummy verification, same 401.
        if USERNAME.fullmatch(username):
            async with self.db.read() as conn:
                user = await users.get_by_name(conn, username)
        # Unknown users still cost one verification (a dummy hash) so timing tells nothing.
        ok = await self.passwords.verify(user.password_hash if user else None, password)
        return user, ok

    async def throttle_check(self, username: str, address: str, *, name_bound: bool = True) -> None:
        """TooManyRequests while this name or this address is locked out (or, with
        `name_bound`, the name is guarded and this address did not sign in as it
        lately: services/throttle.py)."""
        retry_after = await self.throttle.retry_after(username, address, name_bound=name_bound)
        if retry_after is not None:
            log.warning("login throttled for user %s from %s", loggable_name(username), address)
            raise TooManyRequests(
                f"too many failed logins for this user or from this address; "
                f"try again in {retry_after} s",
                retry_after,
            )

    async def verify_credentials(
        self, username: str, password: str, caller: Caller, *, app_password_shaped: bool = False
    ) -> User:
        """The throttle and password check of `login`, issuing nothing: for callers that
        authenticate with a password on each request (the gpodder layer's Basic auth).
        Only a presented, wrong credential counts as a failure, and a wrong password
        repeated within the window counts once (services/throttle.py). Set
        `app_password_shaped` when the password had an app password's shape but was
        none of the user's (a revoked one, most likely): the failure says so."""
        await self.throttle_check(username, caller.address)
        # Each verification costs ~0.1 s of a hash thread: past this many waiting,
        # a flood would only queue up and starve every other login. Refuse at once.
        if self._pending >= self.max_pending:
            raise Unavailable(PENDING_LOGINS, retry_after=1)
        self._pending += 1
        try:
            user, ok = await self._verify(username, password)
        finally:
            self._pending -= 1
        if user is None or not ok or not user.enabled:
            reason = "disabled" if user is not None and ok else "password"
            if reason == "password" and app_password_shaped:
                reason = "app_password"
            await self._failed(username, password, caller, reason)
            raise Unauthorized(BAD_CREDENTIALS)
        await self.throttle.note_success(username, caller.address)
        return user

    async def _failed(self, username: str, password: str, caller: Caller, reason: str) -> None:
        """Record a failure; the line for fail2ban for a new wrong password, a quieter
        one for a repeat (a stale device must not get its household banned there
        either)."""
        counted = True
        try:
            counted = await self.throttle.record_failure(username, password, caller, reason)
        finally:
            name = loggable_name(username)
            if counted:
                log.warning("login failed for user %s from %s", name, caller.address)
            else:
                log.info(
                    "repeated wrong password for user %s from %s (counted once)",
                    name,
                    caller.address,
                )

    async def refresh(self, refresh_token: str) -> tuple[str, int]:
        """A new access token for a valid refresh token: (token, expires_in)."""
        now = timestamps.now_us()
        async with self.db.read() as conn:
            user_id = await tokens.user_for(conn, hash_refresh_token(refresh_token), now)
            user = await users.get_by_id(conn, user_id) if user_id is not None else None
        if user is None or not user.enabled:
            raise Unauthorized(BAD_REFRESH)
        return self.issue_access_token(user), self.config.access_token_lifetime

    async def authenticate(self, access_token: str) -> User:
        """The user an access token belongs to; Unauthorized when it is not valid now."""
        verified = self._verified.get(access_token)
        if verified is None or time.time() >= verified[2]:
            verified = self._verify_signature(access_token)
        user_id, generation, _ = verified
        async with self.db.read() as conn:
            user = await users.get_by_id(conn, user_id)
        if user is None or not user.enabled or user.token_generation != generation:
            raise Unauthorized(BAD_TOKEN, invalid_token=True)
        return user

    def _verify_signature(self, access_token: str) -> tuple[int, int, int]:
        self._verified.pop(access_token, None)
        if not access_token.isascii():
            # Header bytes that are not UTF-8 arrive as lone surrogates, which
            # itsdangerous cannot encode; no token we issue has a non-ASCII character.
            raise Unauthorized(BAD_TOKEN, invalid_token=True)
        lifetime = self.config.access_token_lifetime
        try:
            payload, signed_at = self._serializer.loads(
                access_token, max_age=lifetime, return_timestamp=True
            )
        except SignatureExpired:  # a subclass of BadSignature: catch it first
            raise Unauthorized(EXPIRED_TOKEN, invalid_token=True) from None
        except BadSignature:
            raise Unauthorized(BAD_TOKEN, invalid_token=True) from None
        if (
            not isinstance(payload, dict)
            or type(payload.get("u")) is not int
            or type(payload.get("g")) is not int
        ):
            raise Unauthorized(BAD_TOKEN, invalid_token=True)
        # itsdangerous counts age in whole seconds and refuses an age above max_age:
        # the token is good while int(now) - signed <= lifetime, i.e. before this second.
        verified = (payload["u"], payload["g"], int(signed_at.timestamp()) + lifetime + 1)
        if len(self._verified) >= VERIFIED_TOKENS:
            del self._verified[next(iter(self._verified))]  # the oldest entry
        self._verified[access_token] = verified
        return verified
