"""Is the database answering and accepting writes? (`/healthz`, and the start-up check.)

A write probe that is rolled back tells a read-only or locked database apart at no
cost to the disk. A full disk shows only when pages really reach it, so it is
known from the last real write that failed (`Database.write_failure`); in that
state the probe commits its write, so health comes back as soon as writes would.
"""

from __future__ import annotations

from podsync.db import Database
from podsync.errors import Unavailable
from podsync.store import meta


class _ProbeDone(Exception):
    """Raised inside the probe's write block to roll it back."""


class HealthService:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def check(self) -> None:
        """Return when the database answers and accepts writes; else Unavailable."""
        async with self.db.read() as conn:
            await meta.ping(conn)
        failed_before = self.db.write_failure is not None
        try:
            async with self.db.write() as conn:
                await meta.touch(conn)
                if not failed_before:
                    raise _ProbeDone
        except _ProbeDone:
            pass
        # A rolled-back probe cannot see a full disk: report what the last write saw.
        if self.db.write_failure is not None:
            raise self.db.write_failure


async def require_writable(db: Database) -> None:
    """For start-up: raise Unavailable naming the file when it cannot be written."""
    try:
        await HealthService(db).check()
    except Unavailable as exc:
        raise Unavailable(
            f"database {db.path} cannot be written: {exc.reason}", exc.retry_after
        ) from exc
