"""Login throttling (contract 3): per (username, client address) and per address,
with the counters in the database so that every process shares them.

What counts is a different wrong password (rev. 5): devices at home share one
address, and a phone still set up with an old password retries it again and
again; that is one failure however often it comes, so the right password keeps
working for the household. A wrong password is told from another by a keyed hash
(HMAC with the server's secret key, which only the server knows); neither the
password nor a plain hash of it is ever stored.

After `login_max_failures` different wrong passwords for one pair within the
window, or `login_max_failures_per_address` failures from one address under any
names, further logins of that pair (or from that address) are refused until
enough of those failures leave the window (a failure's last try is its time).
Only failures count; refused and successful logins do not. A password change,
`podsync user unlock NAME` and the web UI's Unlock clear a name.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from dataclasses import dataclass

from podsync import timestamps
from podsync.config import AuthConfig
from podsync.model import Caller, LoginFailure
from podsync.storage.engine import Engine
from podsync.store import login_failures

_US = 1_000_000
KEY_PURPOSE = b"podsync.login-failure\x00"
MAX_CLIENT = 200  # characters of a User-Agent kept with a failure
# NUL and lone surrogates: no database stores them.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class FailuresFrom:
    """A name's failed logins from one address within the window, for the pages
    that show them (newest first)."""

    address: str
    failures: list[LoginFailure]  # one per different wrong password
    locked_until: int | None  # microseconds; None: the name may log in from here

    @property
    def distinct(self) -> int:
        return len(self.failures)

    @property
    def attempts(self) -> int:
        return sum(f.attempts for f in self.failures)

    @property
    def last(self) -> LoginFailure:
        return self.failures[0]


class LoginThrottle:
    def __init__(self, db: Engine, config: AuthConfig, secret_key: str) -> None:
        self.db = db
        self.max_failures = config.login_max_failures
        self.max_per_address = config.login_max_failures_per_address
        self.window_us = config.login_lockout_seconds * _US
        self._secret = secret_key.encode("utf-8", "surrogatepass")

    def password_key(self, name: str, password: str) -> bytes:
        """What a failure keeps of the password: its HMAC under the server's secret,
        with the name (one password tried for two names is two failures)."""
        text = f"{name}\x00{password}".encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, KEY_PURPOSE + text, hashlib.sha256).digest()

    async def retry_after(self, name: str, address: str) -> int | None:
        """Seconds until this name may try again from this address, or None: now."""
        now = timestamps.now_us()
        since = now - self.window_us
        async with self.db.read() as conn:
            # The pair (or address) is free once its n-th newest failure ages out.
            pair = await login_failures.nth_newest_for_pair(
                conn, name, address, since, self.max_failures
            )
            whole = await login_failures.nth_newest_for_address(
                conn, address, since, self.max_per_address
            )
        frees_at = max((t for t in (pair, whole) if t is not None), default=None)
        if frees_at is None:
            return None
        return max(1, math.ceil((frees_at + self.window_us - now) / _US))

    async def record_failure(self, name: str, password: str, caller: Caller, reason: str) -> bool:
        """Record a refused password; True when it counts (a wrong password not
        tried for this name from this address within the window), False for a
        repeat (kept as one more try of the same failure)."""
        now = timestamps.now_us()
        client = _UNSTORABLE.sub("", caller.agent)[:MAX_CLIENT]
        failure = LoginFailure(caller.address, now, now, 1, caller.door, client, reason)
        key = self.password_key(name, password)
        async with self.db.write() as conn:
            return await login_failures.record(conn, name, key, failure, now - self.window_us)

    async def failures_of(self, name: str) -> list[FailuresFrom]:
        """The name's failures in the window by address, the latest address first."""
        now = timestamps.now_us()
        async with self.db.read() as conn:
            rows = await login_failures.for_name(conn, name, now - self.window_us)
        by_address: dict[str, list[LoginFailure]] = {}
        for row in rows:  # newest first, and so is each address's list
            by_address.setdefault(row.address, []).append(row)
        return [
            FailuresFrom(address, failures, self._locked_until(failures))
            for address, failures in by_address.items()
        ]

    def _locked_until(self, failures: list[LoginFailure]) -> int | None:
        if len(failures) < self.max_failures:
            return None
        return failures[self.max_failures - 1].last_at + self.window_us
