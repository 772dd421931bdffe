"""Login throttling (contract 3): per (username, client address) and per address,
with the counters in the database so that every process shares them.

After `login_max_failures` failed logins of one pair within the window, or
`login_max_failures_per_address` failed logins from one address under any names,
further logins of that pair (or from that address) are refused until enough of
those failures leave the window. Only failures count; refused and successful
logins do not. A password change and `podsync user unlock NAME` clear a name.
"""

from __future__ import annotations

import math

from podsync import timestamps
from podsync.config import AuthConfig
from podsync.storage.engine import Engine
from podsync.store import login_failures

_US = 1_000_000


class LoginThrottle:
    def __init__(self, db: Engine, config: AuthConfig) -> None:
        self.db = db
        self.max_failures = config.login_max_failures
        self.max_per_address = config.login_max_failures_per_address
        self.window_us = config.login_lockout_seconds * _US

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

    async def record_failure(self, name: str, address: str) -> None:
        now = timestamps.now_us()
        async with self.db.write() as conn:
            await login_failures.record(conn, name, address, now, now - self.window_us)
