"""Sync health: how each device and app password of a person last fared, for the
Devices page (webui rev. 3).

A good sync is a request of the gpodder or Nextcloud API that went through for a
device (its id in the path, or the device of an app password): its device's
`last_seen_at` moves, at most once a minute per device and process, so a sync costs
no write (the check is a dictionary's). An app password's last use is kept by
`services/app_passwords.py` the same way.

A refused attempt is one whose credentials were not accepted: a wrong password, a
name locked out (contract section 16), an app password revoked (its hash is kept a
while after), a disabled account. It is tied to what the request names: the device
in its path, and the app password its password is (or was). Unknown names tie to
nothing. Each is kept as the subject's last refusal, written at most once a minute
for the same subject, address and reason, so a device retrying in a loop costs a
few reads a minute and one write, and a guesser sending a new password each time
a few reads each (as the login throttle's) and one write a minute."""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass

from podsync import timestamps
from podsync.errors import Unavailable
from podsync.model import Caller, User
from podsync.services.accounts import USERNAME
from podsync.services.app_passwords import looks_like_app_password, secret_hash
from podsync.services.throttle import MAX_CLIENT
from podsync.storage.engine import Connection, Engine
from podsync.store import app_passwords, devices, users
from podsync.store import sync_health as store
from podsync.store.sync_health import APP_PASSWORD, DEVICE, Refusal, Revoked

log = logging.getLogger("podsync.auth")

# NUL and lone surrogates: no database stores them.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
EVERY_S = 60.0  # a subject's good sync or refusal is written at most this often
_REMEMBERED = 10_000

__all__ = ["APP_PASSWORD", "DEVICE", "Health", "Refusal", "Revoked", "SyncHealth"]


@dataclass(frozen=True, slots=True)
class Health:
    """A person's refusals by subject, and their app passwords revoked a while ago."""

    devices: dict[str, Refusal]  # by device id
    app_passwords: dict[int, Refusal]  # by app password id
    revoked: list[Revoked]


class _Recently:
    """Keys seen within EVERY_S (per process): what was written a moment ago."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._seen: OrderedDict[Hashable, float] = OrderedDict()

    def forget(self, key: Hashable) -> None:
        self._seen.pop(key, None)

    def first(self, key: Hashable) -> bool:
        """True (and remember it) unless `key` came within EVERY_S."""
        now = self._clock()
        last = self._seen.get(key)
        if last is not None and now - last < EVERY_S:
            return False
        self._seen[key] = now
        self._seen.move_to_end(key)
        while len(self._seen) > _REMEMBERED:
            self._seen.popitem(last=False)
        return True


class SyncHealth:
    def __init__(
        self,
        db: Engine,
        clock: Callable[[], int] = timestamps.now_us,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.clock = clock
        self._synced = _Recently(monotonic)
        self._refused = _Recently(monotonic)  # attempts looked at
        self._written = _Recently(monotonic)  # refusals written

    def synced_in(
        self, user_id: int, device_id: str
    ) -> Callable[[Connection], Awaitable[None]] | None:
        """A write of this device's own (the web player's) went through: what notes
        it inside that write's transaction, or None when it was noted within EVERY_S."""
        if not self._synced.first((user_id, device_id)):
            return None
        now = self.clock()

        async def note(conn: Connection) -> None:
            await store.touch_device(conn, user_id, device_id, now, now - int(EVERY_S * 1e6))

        return note

    async def synced(self, user_id: int, device_id: str) -> None:
        """A request for this device went through."""
        if not self._synced.first((user_id, device_id)):
            return
        now = self.clock()
        try:
            async with self.db.write() as conn:
                await store.touch_device(conn, user_id, device_id, now, now - int(EVERY_S * 1e6))
        except Unavailable as exc:  # the sync stands; the time waits for the next one
            log.warning("could not record a device's sync: %s", exc.reason)

    async def refused(
        self, name: str, password: str, caller: Caller, device_id: str | None, locked_out: bool
    ) -> None:
        """Credentials for `name` were refused (`locked_out`: before they were checked,
        the name or address being locked out). Never raises."""
        digest = secret_hash(password) if looks_like_app_password(password) else b""
        key = (name, caller.address, device_id, digest, locked_out)
        if not USERNAME.fullmatch(name) or not self._refused.first(key):
            return
        try:
            await self._refused_now(name, digest, caller, device_id, locked_out)
        except Unavailable as exc:
            log.warning("could not record a refused sync: %s", exc.reason)

    async def _refused_now(
        self, name: str, digest: bytes, caller: Caller, device_id: str | None, locked_out: bool
    ) -> None:
        revoked = None
        password_id = None
        async with self.db.read() as conn:
            user = await users.get_by_name(conn, name)
            if user is None:
                return
            if digest:
                found = await app_passwords.find_by_hash(conn, digest)
                if found is not None and found[2].id == user.id:
                    password_id = found[0].id
                else:
                    revoked = await store.find_revoked(conn, digest)
                    if revoked is not None and revoked.user_id == user.id:
                        password_id = revoked.password_id
                    else:
                        revoked = None
            if device_id is not None and not await devices.exists(conn, user.id, device_id):
                device_id = None
        reason = _reason(user, locked_out, revoked is not None)
        subjects = [(APP_PASSWORD, str(password_id))] if password_id is not None else []
        if device_id is not None:
            subjects.append((DEVICE, device_id))
        if not subjects:
            return
        # Whatever the password (a guesser may send a new one each time), a subject's
        # refusal from one address for one reason is written at most once a minute.
        subjects = [
            (kind, subject)
            for kind, subject in subjects
            if self._written.first((user.id, kind, subject, caller.address, reason))
        ]
        if not subjects:
            return
        client = _UNSTORABLE.sub("", caller.agent)[:MAX_CLIENT]
        now = self.clock()
        async with self.db.write() as conn:
            for kind, subject in subjects:
                refusal = Refusal(kind, subject, now, caller.address, client, reason)
                await store.refused(conn, user.id, refusal)
        if device_id is not None:  # its next good sync is written, whenever it comes
            self._synced.forget((user.id, device_id))

    async def of(self, user: User) -> Health:
        async with self.db.read() as conn:
            refusals = await store.refusals_of(conn, user.id)
            revoked = await store.revoked_of(conn, user.id)
        by_device = {r.subject: r for r in refusals if r.kind == DEVICE}
        by_password = {int(r.subject): r for r in refusals if r.kind == APP_PASSWORD}
        return Health(by_device, by_password, revoked)


def _reason(user: User, locked_out: bool, revoked: bool) -> str:
    if locked_out:
        return "locked_out"
    if revoked:
        return "revoked"
    return "disabled" if not user.enabled else "password"
