"""App passwords: a user's named, random credentials, one per app (Nextcloud spec,
"App passwords").

A secret is 150 random bits written as six groups of five lower-case Crockford
base32 characters (`k3x9m-...`), easy to copy and to type on a phone; a keyboard
that capitalises the first letter does no harm, as letter case and dashes are
ignored. Only its SHA-256 is stored: the secret is random, so a fast hash is as safe
as argon2 and costs microseconds, and a unique index on it finds the row a Basic
password names without reading any other. The secret is shown once, when made.

An app password is accepted where HTTP Basic is (the gpodder and Nextcloud APIs,
`services/basic_auth.py`), never by a sign-in form, the Open Podcast API login or a
password change: those check the account password only. Whatever ends a user's
logins (a password change, `user logout`, `user disable`, "Sign out everywhere")
deletes the user's app passwords (`services/accounts.py`); `user delete` cascades.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import logging
import re
import secrets
from dataclasses import dataclass

from podsync import timestamps
from podsync.errors import Conflict, InvalidInput, LimitExceeded, NotFound, Unavailable
from podsync.model import AppPassword, User
from podsync.numbers import parse_int
from podsync.services.auth import require_unchanged
from podsync.storage.engine import Engine
from podsync.store import app_passwords, integrity_errors

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford's base32: no i, l, o, u
GROUPS = 6
GROUP_LENGTH = 5
SECRET_BITS = GROUPS * GROUP_LENGTH * 5  # 150
MAX_PER_USER = 100
MAX_NAME_LENGTH = 100
# A use is recorded at most once a minute per app password: not a write per request.
TOUCH_EVERY_US = 60 * 1_000_000
_SHAPE = re.compile(r"[0-9A-Za-z-]{30,40}", re.ASCII)
# NUL and lone surrogates: no database stores them.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")

log = logging.getLogger("podsync.auth")


@dataclass(frozen=True, slots=True)
class BasicLogin:
    """Who HTTP Basic credentials prove: the user, and the app password used (None:
    the account password)."""

    user: User
    app_password: AppPassword | None


def new_secret() -> str:
    chars = [secrets.choice(ALPHABET) for _ in range(GROUPS * GROUP_LENGTH)]
    return "-".join(
        "".join(chars[i : i + GROUP_LENGTH]) for i in range(0, len(chars), GROUP_LENGTH)
    )


def _normalised(password: str) -> str | None:
    """The secret's 30 characters if `password` has an app password's shape, else None."""
    if not _SHAPE.fullmatch(password):
        return None
    plain = password.replace("-", "").lower()
    if len(plain) != GROUPS * GROUP_LENGTH or any(c not in ALPHABET for c in plain):
        return None
    return plain


def looks_like_app_password(password: str) -> bool:
    return _normalised(password) is not None


def secret_hash(password: str) -> bytes:
    """SHA-256 of the secret as typed, letter case and dashes ignored."""
    plain = _normalised(password)
    return hashlib.sha256((plain if plain is not None else password).encode()).digest()


def check_name(name: str) -> str:
    """The name without surrounding spaces; InvalidInput when empty, too long or
    holding a character that is not printable."""
    name = name.strip()
    if not name:
        raise InvalidInput("give the app password a name (the app it is for)")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidInput(f"an app password's name is at most {MAX_NAME_LENGTH} characters")
    if not name.isprintable() or _UNSTORABLE.search(name):
        raise InvalidInput("an app password's name must be printable text")
    return name


def _numbered(name: str, taken: set[str]) -> str:
    """`name`, else the first `name (2)`, `name (3)`, ... that is free."""
    if name not in taken:
        return name
    n = 2
    while True:
        suffix = f" ({n})"
        candidate = name[: MAX_NAME_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        n += 1


class AppPasswordService:
    def __init__(self, db: Engine) -> None:
        self.db = db

    async def create(
        self, user: User, name: str, *, number_if_taken: bool = False
    ) -> tuple[AppPassword, str]:
        """A new app password and its secret (shown once; only its hash is kept).
        InvalidInput for a bad name or a disabled user, Conflict for a name the user
        already has (unless `number_if_taken`: then `name (2)`, ...), LimitExceeded
        past MAX_PER_USER, Unauthorized when the user's logins ended since `user`
        was read (a password change, a logout, a deletion)."""
        name = check_name(name)
        if not user.enabled:
            raise InvalidInput(f"user {user.name} is disabled; enable them first")
        secret = new_secret()
        now = timestamps.now_us()
        async with self.db.write(user=user.id) as conn:
            await require_unchanged(conn, user)
            if await app_passwords.count_for_user(conn, user.id) >= MAX_PER_USER:
                raise LimitExceeded(
                    f"{user.name} has {MAX_PER_USER} app passwords, the most allowed; "
                    f"revoke one first"
                )
            taken = await app_passwords.names_for_user(conn, user.id)
            if name in taken and not number_if_taken:
                raise Conflict(f"{user.name} already has an app password named {name!r}")
            name = _numbered(name, taken)
            try:
                made = await app_passwords.add(conn, user.id, name, secret_hash(secret), now)
            except integrity_errors():
                raise Conflict(f"{user.name} already has an app password named {name!r}") from None
        log.info("app password %d made for user %s", made.id, user.name)
        return made, secret

    async def list(self, user: User) -> builtins.list[AppPassword]:
        """The user's app passwords by name."""
        async with self.db.read() as conn:
            return await app_passwords.list_for_user(conn, user.id)

    async def revoke(self, user: User, name_or_id: str) -> AppPassword:
        """End the app password with this name, else (digits) with this id; NotFound
        when the user has none such."""
        missing = NotFound(f"{user.name} has no app password named {name_or_id!r}")
        if _UNSTORABLE.search(name_or_id):  # no name holds one (nor can SQL take it)
            raise missing
        async with self.db.write() as conn:
            found = await app_passwords.find_by_name(conn, user.id, name_or_id)
            number = parse_int(name_or_id, 1)
            if found is None and number is not None:
                found = await app_passwords.find_by_id(conn, user.id, number)
            if found is None:
                raise missing
            await app_passwords.delete(conn, user.id, found.id)
        log.info("app password %d of user %s revoked", found.id, user.name)
        return found

    async def revoke_all(self, user: User) -> int:
        """End every app password of the user; how many there were."""
        async with self.db.write() as conn:
            return await app_passwords.delete_for_user(conn, user.id)

    async def find_login(self, name: str, password: str) -> BasicLogin | None:
        """The login `password` proves as one of `name`'s app passwords, or None (not
        one: the caller tries the account password, which counts a failure). No
        argon2; records the use at most once a minute. The caller applies the login
        throttle first (`services/basic_auth.py`)."""
        if not looks_like_app_password(password):
            return None
        digest = secret_hash(password)
        async with self.db.read() as conn:
            found = await app_passwords.find_by_hash(conn, digest)
        if found is None:
            return None
        app_password, stored, user = found
        if not hmac.compare_digest(stored, digest) or user.name != name or not user.enabled:
            return None
        now = timestamps.now_us()
        last = app_password.last_used_at
        if last is None or now - last >= TOUCH_EVERY_US:
            try:
                async with self.db.write() as conn:
                    await app_passwords.touch(conn, app_password.id, now, now - TOUCH_EVERY_US)
            except Unavailable as exc:  # the login stands; the date waits for the next use
                log.warning("could not record the use of an app password: %s", exc.reason)
        return BasicLogin(user, app_password)

    async def is_valid(self, user_id: int, password_id: int) -> bool:
        """Whether the user still has this app password (a cookie made with it)."""
        async with self.db.read() as conn:
            return await app_passwords.exists(conn, user_id, password_id)
