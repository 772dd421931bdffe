"""What this process is among the server's processes (`server.workers`).

One process (the default) is the whole server. With `server.workers = N`, a parent
process (`serve/workers.py`) binds the address and forks N workers (`serve/fork.py`);
each is a whole podsync with its own event loop and database connections, and
worker 0, the leader, also runs what must run once per server: the pruner, the feed
fetcher's passes and the SQLite checkpoints. When the leader dies, the parent starts
another worker 0. This module is only what the app needs to know of that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Worker:
    index: int = 0  # 0 is the leader
    count: int = 1  # workers serving beside each other (1: this process alone)
    ready_fd: int = -1  # a pipe to the parent: one byte once serving (-1: none)
    lifeline_fd: int = -1  # reads end-of-file once the parent is gone (-1: none)
    shared_dir: str = ""  # where the workers' metrics meet ("" with one process)

    @property
    def leader(self) -> bool:
        """Runs the background tasks: the pruner, the feed fetcher's passes, the
        SQLite checkpoints."""
        return self.index == 0

    @property
    def supervised(self) -> bool:
        """One of several workers under a parent process."""
        return self.lifeline_fd >= 0

    def share(self, limit: int) -> int:
        """This worker's part of a server-wide `limit` (at least 1)."""
        return max(1, math.ceil(limit / self.count))


ALONE = Worker()
