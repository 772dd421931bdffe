"""Sign-in for the web UI: a browser session is a random token in a cookie and a
row in the database (its SHA-256), so it is revocable, shared by every server
process and kept over restarts. Each session carries its own CSRF token.

Signing in goes through the same throttle, password check and fail2ban lines as
every other login (`AuthService.verify_credentials`). Whatever revokes a user's
tokens (a password change, `podsync user logout`, `disable`) deletes the sessions
too (`services.accounts`).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from podsync import timestamps
from podsync.model import Caller, User
from podsync.services.accounts import AccountService
from podsync.services.auth import AuthService, require_unchanged
from podsync.storage.engine import Engine
from podsync.store import web_sessions
from podsync.store.web_sessions import WebSession

# A token we issue: 43 URL-safe characters; anything far longer is not one.
MAX_TOKEN = 128


@dataclass(frozen=True, slots=True)
class SignedIn:
    user: User
    session: WebSession


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


class WebSessionService:
    def __init__(
        self, db: Engine, auth: AuthService, accounts: AccountService, lifetime_s: int
    ) -> None:
        self.db = db
        self.auth = auth
        self.accounts = accounts
        self.lifetime_us = lifetime_s * 1_000_000

    async def sign_in(self, username: str, password: str, caller: Caller) -> str:
        """A new session's token; TooManyRequests, Unauthorized or Unavailable as a
        login would be refused."""
        user = await self.auth.verify_credentials(username, password, caller)
        token = secrets.token_urlsafe(32)
        now = timestamps.now_us()
        async with self.db.write(user=user.id) as conn:
            await require_unchanged(conn, user)  # a revocation since the check wins
            await web_sessions.delete_expired(conn, now)
            await web_sessions.add(
                conn,
                token_hash(token),
                user.id,
                secrets.token_urlsafe(32),
                now,
                now + self.lifetime_us,
            )
        return token

    async def find(self, token: str) -> SignedIn | None:
        """The session a cookie names, while it and its user are valid."""
        if not token or len(token) > MAX_TOKEN or not token.isascii():
            return None
        async with self.db.read() as conn:
            found = await web_sessions.find(conn, token_hash(token), timestamps.now_us())
        if found is None or not found[1].enabled:
            return None
        return SignedIn(found[1], found[0])

    async def sign_out(self, session: WebSession) -> None:
        async with self.db.write() as conn:
            await web_sessions.delete(conn, session.token_hash)

    async def keep_import_report(self, session: WebSession, report: str) -> None:
        """The report of an OPML import, for the page the browser is sent to next
        (a redirect after the upload: reloading that page sends nothing again)."""
        async with self.db.write() as conn:
            await web_sessions.set_import_report(conn, session.token_hash, report)

    async def import_report(self, session: WebSession) -> str | None:
        async with self.db.read() as conn:
            return await web_sessions.import_report(conn, session.token_hash)

    async def sign_out_everywhere(self, user: User) -> None:
        """Every session, access and refresh token and gpodder session of the user."""
        await self.accounts.logout(user.name)

    async def change_password(self, user: User, current: str, new: str, caller: Caller) -> None:
        """Check the current password (throttled and logged like a login), then set
        the new one, which ends every session and token of the user."""
        await self.auth.verify_credentials(user.name, current, caller)
        await self.accounts.set_password(user.name, new)
