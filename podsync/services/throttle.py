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

An IPv6 address counts by its /64 (a home connection has a whole /64 to rotate
through). And guesses are bounded per name, not only per address (contract section
17): past `login_max_failures_per_name` different wrong passwords for a name within
an hour, from all addresses together, the name is guarded: it may sign in only from
an address where it signed in successfully within the last 30 days (and with an app
password, whose guess is hopeless), until enough of those guesses leave the hour.
So an attacker with many addresses gets a bounded number of guesses, and cannot lock
a household out from outside: its devices sign in from where they always do.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import math
import re
import time
from collections import OrderedDict
from dataclasses import dataclass

from podsync import timestamps
from podsync.config import AuthConfig
from podsync.model import Caller, LoginFailure
from podsync.storage.engine import Connection, Engine
from podsync.store import login_failures, login_successes

log = logging.getLogger("podsync.auth")
_US = 1_000_000
KEY_PURPOSE = b"podsync.login-failure\x00"
MAX_CLIENT = 200  # characters of a User-Agent kept with a failure
# NUL and lone surrogates: no database stores them.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
NAME_WINDOW_US = 3600 * _US  # the window of the bound on guesses at a name
TRUSTED_FOR_US = 30 * 86400 * _US  # a successful sign-in keeps its address trusted this long
# A success is written at most this often per name and address and process (every
# request of a Basic-auth app is a sign-in); NOTED_MAX of them remembered.
NOTE_EVERY_S = 3600.0
NOTED_MAX = 10_000


def counted_address(address: str) -> str:
    """What a failure counts against: the address, or an IPv6 address's /64."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return address


@dataclass(frozen=True, slots=True)
class NameGuard:
    """The bound on guesses at a name, as the pages show it: the different wrong
    passwords tried for it within the hour, from how many addresses, and until when
    it may sign in only from where it signed in before (None: not guarded)."""

    guesses: int
    addresses: int
    until: int | None


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
        self.max_per_name = config.login_max_failures_per_name
        self.window_us = config.login_lockout_seconds * _US
        # Failures are kept for the longer of the two windows.
        self.kept_us = max(self.window_us, NAME_WINDOW_US)
        self._secret = secret_key.encode("utf-8", "surrogatepass")
        self._noted: OrderedDict[tuple[str, str], float] = OrderedDict()

    def password_key(self, name: str, password: str) -> bytes:
        """What a failure keeps of the password: its HMAC under the server's secret,
        with the name (one password tried for two names is two failures)."""
        text = f"{name}\x00{password}".encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, KEY_PURPOSE + text, hashlib.sha256).digest()

    async def retry_after(self, name: str, address: str, *, name_bound: bool = True) -> int | None:
        """Seconds until this name may try again from this address, or None: now.
        `name_bound` False: the bound on guesses at the name is not asked (an app
        password, which no guess finds)."""
        now = timestamps.now_us()
        since = now - self.window_us
        group = counted_address(address)
        async with self.db.read() as conn:
            # The pair (or address) is free once its n-th newest failure ages out.
            pair = await login_failures.nth_newest_for_pair(
                conn, name, group, since, self.max_failures
            )
            whole = await login_failures.nth_newest_for_address(
                conn, group, since, self.max_per_address
            )
            frees = [t + self.window_us for t in (pair, whole) if t is not None]
            if name_bound:
                guarded = await self._guarded_until(conn, name, now)
                if guarded is not None and not await login_successes.signed_in_since(
                    conn, name, group, now - TRUSTED_FOR_US
                ):
                    frees.append(guarded)
        if not frees:
            return None
        return max(1, math.ceil((max(frees) - now) / _US))

    async def _guarded_until(self, conn: Connection, name: str, now: int) -> int | None:
        nth = await login_failures.nth_newest_password_of_name(
            conn, name, now - NAME_WINDOW_US, self.max_per_name
        )
        return None if nth is None else nth + NAME_WINDOW_US

    async def name_guard(self, name: str) -> NameGuard:
        """The bound on guesses at `name` now, for the pages."""
        now = timestamps.now_us()
        async with self.db.read() as conn:
            guesses, addresses = await login_failures.guesses_at_name(
                conn, name, now - NAME_WINDOW_US
            )
            until = await self._guarded_until(conn, name, now)
        return NameGuard(guesses, addresses, until)

    async def note_success(self, name: str, address: str) -> None:
        """The name signed in from this address: past the bound on guesses at the
        name, it may still sign in from here for TRUSTED_FOR_US. Written at most once
        per NOTE_EVERY_S per name and address from this process."""
        key = (name, counted_address(address))
        noted = self._noted.get(key)
        if noted is not None and time.monotonic() - noted < NOTE_EVERY_S:
            return
        now = timestamps.now_us()
        try:
            async with self.db.write() as conn:
                await login_successes.note(conn, name, key[1], now, now - TRUSTED_FOR_US)
        except Exception:  # a note missed never fails the sign-in it follows
            log.warning("a successful sign-in could not be noted", exc_info=True)
            return
        self._noted[key] = time.monotonic()
        self._noted.move_to_end(key)
        while len(self._noted) > NOTED_MAX:
            self._noted.popitem(last=False)

    async def record_failure(self, name: str, password: str, caller: Caller, reason: str) -> bool:
        """Record a refused password; True when it counts (a wrong password not
        tried for this name from this address within the window), False for a
        repeat (kept as one more try of the same failure)."""
        now = timestamps.now_us()
        client = _UNSTORABLE.sub("", caller.agent)[:MAX_CLIENT]
        address = counted_address(caller.address)
        failure = LoginFailure(address, now, now, 1, caller.door, client, reason)
        key = self.password_key(name, password)
        async with self.db.write() as conn:
            return await login_failures.record(conn, name, key, failure, now - self.kept_us)

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
