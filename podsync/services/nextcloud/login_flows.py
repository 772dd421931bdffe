"""Login Flow v2 (Nextcloud's protocol; AntennaPod's "Nextcloud" option). No HTTP.

1. An app starts a flow (unauthenticated, throttled per address): a random flow id
   for the browser page and a random poll token for the app; only the token's
   SHA-256 is stored, in the database, so that any process answers any step.
2. The person signs in to the web UI and grants (or cancels) the flow.
3. The app polls with its token. The first poll after the grant makes the app
   password, spends the flow and returns the secret once; every other poll finds
   nothing. A poll is one indexed read: no password hashing, never a failed login.

The app password is made at the poll, not at the grant: then no secret is ever
stored, not even for the seconds between the grant and the poll.
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
from dataclasses import dataclass

from podsync import timestamps
from podsync.errors import TooManyRequests, Unauthorized
from podsync.model import User
from podsync.services.auth import require_unchanged
from podsync.services.nextcloud import FLOW_LIFETIME_S, THROTTLE_WINDOW_S
from podsync.storage.engine import Engine
from podsync.store import login_flows, users
from podsync.store.login_flows import CANCELLED, GRANTED, LoginFlow

# Flows one address may start within THROTTLE_WINDOW_S (a phone retrying a few times,
# a household behind one address; not a script filling the table).
MAX_FLOWS_PER_ADDRESS = 20
MAX_USER_AGENT = 256
_US = 1_000_000
_FLOW_ID = re.compile(r"[A-Za-z0-9_-]{20,64}", re.ASCII)
_APP_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 ._+-]{0,40}")


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def app_name(user_agent: str) -> str:
    """The app a flow's User-Agent names (`AntennaPod/3.5.0` -> `AntennaPod`), or
    `Nextcloud app` when it names none a person would recognise."""
    product = user_agent.strip().split("/", 1)[0].split("(", 1)[0].strip()
    match = _APP_NAME.fullmatch(product)
    return match.group(0).strip() if match else "Nextcloud app"


@dataclass(frozen=True)
class Started:
    flow_id: str
    token: str


@dataclass(frozen=True)
class Pending:
    flow_id: str
    app: str  # the app's name as its User-Agent gives it: what it says, not verified
    address: str  # the client address that started the sign-in
    started_at: int  # microseconds since the epoch


class LoginFlows:
    def __init__(self, db: Engine) -> None:
        self.db = db

    async def start(self, user_agent: str, address: str) -> Started:
        """A new flow; TooManyRequests when this address started too many lately."""
        now = timestamps.now_us()
        since = now - THROTTLE_WINDOW_S * _US
        flow_id, token = secrets.token_urlsafe(24), secrets.token_urlsafe(32)
        agent = user_agent.encode("utf-8", "replace").decode("utf-8")[:MAX_USER_AGENT]
        agent = agent.replace("\x00", "")
        async with self.db.write() as conn:
            if await login_flows.count_from(conn, address, since) >= MAX_FLOWS_PER_ADDRESS:
                oldest = await login_flows.oldest_from(conn, address, since) or now
                wait = max(1, math.ceil((oldest + THROTTLE_WINDOW_S * _US - now) / _US))
                raise TooManyRequests(
                    f"too many sign-in requests from this address; try again in {wait} s", wait
                )
            await login_flows.add(
                conn,
                flow_id,
                token_hash(token),
                agent,
                address,
                now,
                now + FLOW_LIFETIME_S * _US,
            )
        return Started(flow_id, token)

    async def pending(self, flow_id: str) -> Pending | None:
        """The flow the browser page shows, while it waits for a decision."""
        flow = await self._get(flow_id)
        if flow is None or flow.state != login_flows.PENDING:
            return None
        return Pending(flow.flow_id, app_name(flow.user_agent), flow.address, flow.created_at)

    async def decide(self, flow_id: str, user: User, grant: bool) -> bool:
        """Grant the flow to `user`, or cancel it; False when it is no longer pending,
        or when the user's logins ended since `user` was read (a grant written after
        "Sign out everywhere" would outlive it)."""
        if not _FLOW_ID.fullmatch(flow_id):
            return False
        try:
            async with self.db.write(user=user.id) as conn:
                await require_unchanged(conn, user)
                return await login_flows.decide(
                    conn, flow_id, GRANTED if grant else CANCELLED, user.id, timestamps.now_us()
                )
        except Unauthorized:
            return False

    async def spend(self, token: str) -> tuple[User, str] | None:
        """(user, app name) of the granted flow this token polls, now spent; None for
        anything else (the poll answers 404). One indexed read and one write."""
        if not token or len(token) > 200:
            return None
        async with self.db.write() as conn:
            flow = await login_flows.spend(conn, token_hash(token), timestamps.now_us())
            if flow is None or flow.user_id is None:
                return None
            user = await users.get_by_id(conn, flow.user_id)
        if user is None or not user.enabled:
            return None
        return user, app_name(flow.user_agent)

    async def _get(self, flow_id: str) -> LoginFlow | None:
        if not _FLOW_ID.fullmatch(flow_id):
            return None
        async with self.db.read() as conn:
            flow = await login_flows.get(conn, flow_id)
        if flow is None or flow.expires_at <= timestamps.now_us():
            return None
        return flow
