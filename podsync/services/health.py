"""Is the database answering and accepting writes? (`/healthz`, and the start-up check.)

A write probe that is rolled back tells a read-only or locked database apart at no
cost to the disk. A full disk shows only when pages really reach it, so it is
known from the last real write that failed (`write_failure` of the engine); health
comes back with the next write that commits, or once the disk has room again.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from podsync.errors import Unavailable
from podsync.storage.engine import Engine
from podsync.storage.errors import RETRY_AFTER_STORAGE
from podsync.store import meta

# After a "disk full", this much free space counts as room again. Less would let a
# small probe write succeed (SQLite reuses WAL space) while real batches still fail.
FREE_SPACE_HEALTHY = 1 << 20


class _ProbeDone(Exception):
    """Raised inside the probe's write block to roll it back."""


class HealthService:
    def __init__(self, db: Engine) -> None:
        self.db = db

    async def check(self) -> None:
        """Return when the database answers and accepts writes; else Unavailable."""
        async with self.db.read() as conn:
            await meta.ping(conn)
        try:
            async with self.db.write() as conn:
                await meta.touch(conn)
                raise _ProbeDone
        except _ProbeDone:
            pass
        failure = self.db.write_failure
        if failure is not None and failure.retry_after == RETRY_AFTER_STORAGE:
            if self._free_space() >= FREE_SPACE_HEALTHY:
                self.db.write_failure = None
            else:
                raise failure

    def _free_space(self) -> int:
        try:
            return shutil.disk_usage(Path(self.db.path).absolute().parent).free
        except OSError:
            return 0


async def require_writable(db: Engine) -> None:
    """For start-up: raise Unavailable naming the file when it cannot be written."""
    try:
        await HealthService(db).check()
    except Unavailable as exc:
        raise Unavailable(
            f"database {db.path} cannot be written: {exc.reason}", exc.retry_after
        ) from exc
