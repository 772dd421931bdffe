"""Whose turn it is to write, among the workers of one server on one SQLite file.

SQLite lets one connection write at a time, and a writer that finds the lock taken by
another process polls for it: its busy handler sleeps 1, 2, 5, 10 ms ... between
tries. Between workers that write all the time, that sleep is lost throughput, and
the worker that just committed usually takes the lock again before the sleeper wakes.
So the workers of one server (`server.workers`) first take a turn: an exclusive
`flock` on a file of the parent's, held from BEGIN IMMEDIATE to the end of the
COMMIT. A worker waiting for it waits in the kernel, on the commit thread, and wakes
the moment the other lets go. The kernel lets go of a worker's turn when it dies,
however it dies. SQLite's own lock still decides: the turn only orders the workers,
and a process outside them (the CLI, another `podsync serve`) is waited for as before.
"""

from __future__ import annotations

import fcntl
import os


class WriteTurn:
    """One worker's hold on the shared lock file (its own open file: a turn taken
    through a descriptor inherited from the parent would be the parent's)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = -1

    def open(self) -> None:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def try_take(self) -> bool:
        """Take the turn if it is free (on the event loop: never waits)."""
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def take(self) -> None:
        """Wait for the turn (on the commit thread)."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def give(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
