"""Password hashing with argon2id, off the event loop and bounded in parallelism.

Each argon2 hash uses ~64 MiB and ~0.1 s of one core, so at most `HASH_THREADS` run
at once: a login storm waits in line instead of exhausting a Raspberry Pi's memory,
and leaves one core to the event loop, so that the other clients' requests are not
starved while it lasts (on 2 cores, two hash threads tripled list latency).
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from podsync.errors import InvalidInput

if TYPE_CHECKING:
    from argon2 import PasswordHasher

HASH_THREADS = max(1, min(2, (os.cpu_count() or 1) - 1))
MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024

# A hash of a random, forgotten password made with PasswordHasher()'s defaults.
# Verifying against it for unknown users costs what a real verification costs, so
# response time does not reveal which usernames exist. A test checks that its
# parameters still match the hasher's.
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
    def __init__(self, threads: int = HASH_THREADS) -> None:
        self._hasher_made: PasswordHasher | None = None
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="argon2")

    @property
    def _hasher(self) -> PasswordHasher:
        """argon2 is loaded by the first password to check, not at start (half a MiB of
        an idle server's memory); two threads making it at once make equal hashers."""
        if self._hasher_made is None:
            from argon2 import PasswordHasher

            self._hasher_made = PasswordHasher()
        return self._hasher_made

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    async def hash(self, password: str) -> str:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._hasher.hash, _encode(password))

    async def verify(self, password_hash: str | None, password: str) -> bool:
        """True when `password` matches; a None hash spends a dummy verification."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor,
            self._verify,
            password_hash or DUMMY_HASH,
            password,
            password_hash is not None,
        )

    def _verify(self, password_hash: str, password: str, real: bool) -> bool:
        from argon2.exceptions import InvalidHashError, VerificationError

        try:
            ok = self._hasher.verify(password_hash, _encode(password))
        except (VerificationError, InvalidHashError):
            return False
        return ok and real

    def needs_rehash(self, password_hash: str) -> bool:
        return self._hasher.check_needs_rehash(password_hash)
