"""Password hashing with argon2id, off the event loop and bounded in parallelism.

Each argon2 hash uses ~64 MiB and ~0.1 s of one core, so at most `HASH_THREADS` run
at once: a login storm waits in line instead of exhausting a Raspberry Pi's memory,
and leaves one core to the event loop, so that the other clients' requests are not
starved while it lasts (on 2 cores, two hash threads tripled list latency).

A hash's lanes (`p=4`, argon2-cffi's default) are computed one after the other in
the hash thread itself. argon2-cffi's own calls start a thread per lane, so a single
login kept four threads busy and took both cores from the event loop: the list's
p99 during a storm of 20 logins was 7.9 times its quiet p99. The result is the same
hash, byte for byte (argon2's output depends on its lanes, not on its threads).
On Linux the hash threads also run at a lower priority (nice +10): on a machine busy
with other work, the event loop still wins the core it needs over a queue of logins.

The cost (memory and passes, `auth.password_hash_memory_kib` and `..._time_cost`)
is a setting; the lanes stay 4. A hash of another cost `needs_rehash`, and the
Open Podcast API's login rehashes it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from podsync.errors import InvalidInput

if TYPE_CHECKING:
    from argon2 import PasswordHasher

    from podsync.config import AuthConfig

HASH_THREADS = max(1, min(2, (os.cpu_count() or 1) - 1))
HASH_NICENESS = 10  # added to the hash threads' nice value (Linux)
MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024
DEFAULT_MEMORY_KIB = 65536  # PasswordHasher()'s defaults, and the settings'
DEFAULT_TIME_COST = 3
LANES = 4

# A hash of a random, forgotten password made with PasswordHasher()'s defaults.
# Verifying against it for unknown users costs what a real verification costs, so
# response time does not reveal which usernames exist. A test checks that its
# parameters still match the hasher's. Another cost makes its own on first need
# (`PasswordService._verify`).
DUMMY_HASH = (
    "$argon2id$v=19$m=65536,t=3,p=4$rfHzlTFG7PVsFCv800VnMg$"
    "TwtiNbPml1NgL9Bqf05NKW0up6GLZ22jbw+gYcBN2Q4"
)


def check_password_rules(password: str) -> None:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise InvalidInput(f"password must be at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise InvalidInput(f"password must be at most {MAX_PASSWORD_LENGTH} characters")


def _encode(password: str) -> bytes:
    # A JSON body can carry a lone surrogate ("\\ud800"); strict UTF-8 would raise.
    return password.encode("utf-8", "surrogatepass")


class PasswordService:
    def __init__(
        self,
        threads: int = HASH_THREADS,
        memory_kib: int = DEFAULT_MEMORY_KIB,
        time_cost: int = DEFAULT_TIME_COST,
    ) -> None:
        """`memory_kib` and `time_cost`: argon2id's cost of each new hash (the
        config validates them against OWASP's minimum)."""
        self.memory_kib, self.time_cost = memory_kib, time_cost
        default = (memory_kib, time_cost) == (DEFAULT_MEMORY_KIB, DEFAULT_TIME_COST)
        self._dummy: str | None = DUMMY_HASH if default else None
        self._hasher_made: PasswordHasher | None = None
        self._executor = ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix="argon2", initializer=_lower_priority
        )

    @classmethod
    def for_config(cls, auth: AuthConfig, threads: int = HASH_THREADS) -> PasswordService:
        return cls(threads, auth.password_hash_memory_kib, auth.password_hash_time_cost)

    @property
    def _hasher(self) -> PasswordHasher:
        """argon2 is loaded by the first password to check, not at start (half a MiB of
        an idle server's memory); two threads making it at once make equal hashers."""
        if self._hasher_made is None:
            from argon2 import PasswordHasher

            self._hasher_made = PasswordHasher(
                time_cost=self.time_cost, memory_cost=self.memory_kib, parallelism=LANES
            )
        return self._hasher_made

    def _hash(self, password: bytes) -> str:
        h = self._hasher
        salt = os.urandom(h.salt_len)
        raw = _argon2id(password, salt, h.time_cost, h.memory_cost, h.parallelism, h.hash_len)
        return (
            f"$argon2id$v=19$m={h.memory_cost},t={h.time_cost},p={h.parallelism}"
            f"${_b64(salt)}${_b64(raw)}"
        )

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    async def hash(self, password: str) -> str:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._hash, _encode(password))

    async def verify(self, password_hash: str | None, password: str) -> bool:
        """True when `password` matches; a None hash spends a dummy verification."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._verify, password_hash, password)

    def _verify(self, password_hash: str | None, password: str) -> bool:
        from argon2.exceptions import HashingError, InvalidHashError, VerificationError

        real = password_hash is not None
        if password_hash is None:
            password_hash = self._dummy
            if password_hash is None:  # making it costs what a verification costs
                self._dummy = self._hash(os.urandom(32))
                return False
        try:
            ok = _verify_one_thread(password_hash, _encode(password))
            if ok is None:  # not an argon2id v1.3 hash: argon2-cffi's own check
                ok = self._hasher.verify(password_hash, _encode(password))
        # A stored hash argon2 cannot compute (a salt too short, a cost out of range)
        # fails its verification, as argon2-cffi's verify has it.
        except (VerificationError, InvalidHashError, HashingError):
            return False
        return ok and real

    def needs_rehash(self, password_hash: str) -> bool:
        return self._hasher.check_needs_rehash(password_hash)


def _lower_priority() -> None:
    """Lower this thread's priority. Linux keeps a nice value per thread (setpriority
    on its thread id); elsewhere the call would change the whole process, so it is
    skipped. Raising one's nice value needs no privilege; a refusal is harmless."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            tid = threading.get_native_id()
            os.setpriority(
                os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + HASH_NICENESS
            )


def _argon2id(password: bytes, salt: bytes, t: int, m: int, lanes: int, length: int) -> bytes:
    """The raw argon2id (v1.3) hash, its `lanes` computed by the calling thread alone."""
    from argon2 import low_level
    from argon2.exceptions import HashingError

    ffi, lib = low_level.ffi, low_level.lib  # type: ignore[attr-defined]

    out = ffi.new("uint8_t[]", length)
    c_password = ffi.new("uint8_t[]", password)
    c_salt = ffi.new("uint8_t[]", salt)
    context = ffi.new(
        "argon2_context *",
        {
            "version": low_level.ARGON2_VERSION,
            "out": out,
            "outlen": length,
            "pwd": c_password,
            "pwdlen": len(password),
            "salt": c_salt,
            "saltlen": len(salt),
            "secret": ffi.NULL,
            "secretlen": 0,
            "ad": ffi.NULL,
            "adlen": 0,
            "t_cost": t,
            "m_cost": m,
            "lanes": lanes,
            "threads": 1,
            "allocate_cbk": ffi.NULL,
            "free_cbk": ffi.NULL,
            "flags": lib.ARGON2_DEFAULT_FLAGS,
        },
    )
    result = low_level.core(context, low_level.Type.ID.value)
    if result != lib.ARGON2_OK:
        raise HashingError(low_level.error_to_str(result))
    return bytes(ffi.buffer(out, length))


def _verify_one_thread(encoded: str, password: bytes) -> bool | None:
    """Whether `password` matches an argon2id v1.3 hash (computed in this thread), or
    None for any other kind of hash. A malformed one raises InvalidHashError."""
    from argon2 import Type, extract_parameters

    if not encoded.startswith("$argon2id$v=19$"):
        return None
    params = extract_parameters(encoded)  # InvalidHashError when malformed
    if params.type is not Type.ID:
        return None
    salt, expected = (_unb64(part) for part in encoded.rsplit("$", 2)[1:])
    raw = _argon2id(
        password,
        salt,
        params.time_cost,
        params.memory_cost,
        params.parallelism,
        len(expected),
    )
    return hmac.compare_digest(raw, expected)


def _b64(raw: bytes) -> str:
    """argon2's encoding: standard base64 without padding."""
    return base64.b64encode(raw).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    from argon2.exceptions import InvalidHashError

    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except ValueError as exc:
        raise InvalidHashError(str(exc)) from exc
