"""Checkpoints of the SQLite write-ahead log, off the writer's path.

The writer does not checkpoint inside its COMMITs (a checkpoint copies the WAL into
the database file and syncs it: tens of ms added to one group's answer). A thread
of its own, with its own connection, does two kinds:
- PASSIVE, after a COMMIT that leaves the WAL past CHECKPOINT_WAL_BYTES: it never
  blocks readers or the writer; the next write that finds the log wholly copied
  starts it over from its beginning.
- TRUNCATE, once the writer has been idle for `idle_seconds` (one second when the
  log is past CHECKPOINT_WAL_BYTES: after a burst its space is given back at once,
  while a server that writes now and then keeps its small log between writes): it
  waits for readers of old snapshots (briefly) and cuts the log back to zero bytes.
  Without it a burst leaves the file at its largest for good: a PASSIVE checkpoint recycles the
  space but never gives it back, and a reader holding an old snapshot during the
  burst (a long export, a backup) stops even the recycling, so the log grows
  without bound meanwhile (314 MB after 28 MB of uploads).

Under continuous writes the PASSIVE checkpoints alone never let the log be recycled:
the writer appends while one runs, so when the next write begins the log is never
wholly copied, and SQLite starts a log over only then (1.5 GB after 40 s of uploads).
So past RESTART_WAL_BYTES the writer itself checkpoints, after a COMMIT and under its
write lock (`restart`): only what the last PASSIVE left is copied, nothing is
appended meanwhile, and the next write starts the log over from its beginning.

`journal_size_limit` (every connection, `sqlite_connection.connect`) cuts a log that
starts over back to CHECKPOINT_WAL_BYTES, so the file's size is the log's length
past that (what `committed` reads: a stat, never an open of the file, which would
drop SQLite's POSIX locks in this process).

Several worker processes on one file (`server.workers`) checkpoint once, not once
each: the leader's checkpointer ("watch") also sees the others' commits, in the log
file's size and modification time, looked at every WATCH_S; the other workers'
("none") make no checkpoint of their own, but their writer still restarts a log
past RESTART_WAL_BYTES after its COMMIT, as above.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor

from podsync.storage.sqlite_connection import connect

log = logging.getLogger("podsync.db")

CHECKPOINT_WAL_BYTES = 4 * 1024 * 1024
# Past this the writer checkpoints what is left, so the log starts over (see above).
RESTART_WAL_BYTES = 16 * 1024 * 1024
# Quiet time after the last COMMIT before the log is truncated (contract: under
# 64 MiB within a minute of quiet); for a log past CHECKPOINT_WAL_BYTES, a burst's,
# BIG_LOG_QUIET_SECONDS (a 200,000-action upload left a 4-18 MB log for 10 s).
IDLE_SECONDS = 10.0
BIG_LOG_QUIET_SECONDS = 1.0
# A TRUNCATE checkpoint waits this long for readers of old snapshots, then gives up
# until the next quiet spell (it holds the write lock meanwhile: keep it short).
TRUNCATE_BUSY_MS = 1000
# How often the leader of several workers looks at the log for the others' commits.
WATCH_S = 1.0
MODES = ("own", "watch", "none")


class Checkpointer:
    """The checkpoints of one database file; `committed()` after every COMMIT.

    `mode`: "own" (this process alone writes the file), "watch" (the leader of several
    workers: other processes' commits count too) or "none" (another process makes
    the checkpoints)."""

    def __init__(
        self,
        path: str,
        durability: str,
        idle_seconds: float = IDLE_SECONDS,
        mode: str = "own",
        watch_s: float = WATCH_S,
    ) -> None:
        assert mode in MODES, mode
        self.path = path
        self.durability = durability
        self.idle_seconds = idle_seconds
        self.mode = mode
        self.watch_s = watch_s
        self._watch_timer: asyncio.TimerHandle | None = None
        self._seen = (0, 0)  # the log's (size, modification time) at the last look
        self._wal_path = path + "-wal"
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="podsync-checkpoint")
        self._running: asyncio.Future[bool] | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._last_commit = 0.0
        self._closed = False
        self._raw: sqlite3.Connection | None = None  # the checkpoint thread's own
        # The log size at which the writer checkpoints itself next (raised while a
        # reader of an old snapshot keeps the log from starting over).
        self._restart_at = RESTART_WAL_BYTES

    def committed(self) -> bool:
        """Note a COMMIT: a PASSIVE checkpoint when the log is due one, and the quiet
        timer (one per quiet spell, not one per COMMIT). True when the log is past
        RESTART_WAL_BYTES: the writer should call `restart` before its next write."""
        if self.mode == "none":
            return self._wal_size() >= self._restart_at
        self._note_commit()
        if self._busy():
            return False
        size = self._wal_size()
        if size >= self._restart_at:
            return True
        if size > CHECKPOINT_WAL_BYTES:
            self._start("PASSIVE")
        return False

    def _note_commit(self) -> None:
        loop = asyncio.get_running_loop()
        self._last_commit = now = loop.time()
        quiet = self._quiet_needed(self._wal_size())
        # One timer per quiet spell, brought forward when the log has grown past
        # CHECKPOINT_WAL_BYTES since it was set.
        if self._idle_timer is None or self._idle_timer.when() > now + quiet:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            self._idle_timer = loop.call_later(quiet, self._when_quiet)

    def _quiet_needed(self, wal_size: int) -> float:
        """How long a quiet spell must last before a log this long is truncated. A log
        of CHECKPOINT_WAL_BYTES exactly is a burst's too: one that started over after
        growing past it, cut back to `journal_size_limit`."""
        if wal_size >= CHECKPOINT_WAL_BYTES:
            return min(BIG_LOG_QUIET_SECONDS, self.idle_seconds)
        return self.idle_seconds

    def watch(self) -> None:
        """("watch" mode, on the event loop) Look at the log every `watch_s` for the
        commits of other processes: a PASSIVE checkpoint once it passes
        CHECKPOINT_WAL_BYTES, a TRUNCATE once it has been still for `idle_seconds`."""
        if self.mode == "watch" and self._watch_timer is None and not self._closed:
            self._seen = self._wal_state()
            self._watch_timer = asyncio.get_running_loop().call_later(self.watch_s, self._look)

    def _look(self) -> None:
        self._watch_timer = None
        if self._closed:
            return
        state = self._wal_state()
        if state != self._seen:  # written since the last look (by any process)
            self._seen = state
            self._note_commit()
            if not self._busy() and state[0] > CHECKPOINT_WAL_BYTES:
                self._start("PASSIVE")
        self._watch_timer = asyncio.get_running_loop().call_later(self.watch_s, self._look)

    def restart(self, writer: sqlite3.Connection) -> None:
        """On the commit thread, with the writer's connection, under its write lock:
        copy what the PASSIVE checkpoints left, so that the next write starts the log
        over. Never raises (the writers' COMMIT is through); when a reader of an old
        snapshot holds part of the log, the next COMMIT tries again."""
        try:
            blocked, logged, copied = writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error as exc:
            log.warning("a checkpoint of %s failed: %s", self.path, exc)
            blocked, logged, copied = 1, 1, 0
        if blocked or copied < logged:  # try again once the log has grown some more
            self._restart_at = self._wal_size() + CHECKPOINT_WAL_BYTES
        else:
            self._restart_at = RESTART_WAL_BYTES

    def _when_quiet(self) -> None:
        self._idle_timer = None
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        quiet_for = loop.time() - self._last_commit
        needed = self._quiet_needed(self._wal_size())
        if quiet_for < needed:  # a COMMIT came since: wait for its quiet
            self._idle_timer = loop.call_later(needed - quiet_for, self._when_quiet)
            return
        if self._busy():  # a PASSIVE one still runs: look again later
            self._idle_timer = loop.call_later(needed, self._when_quiet)
            return
        if self._wal_size() > 0:
            self._start("TRUNCATE").add_done_callback(self._after_truncate)

    def _after_truncate(self, done: asyncio.Future[bool]) -> None:
        went_through = not done.cancelled() and done.exception() is None and done.result()
        if not went_through and self._idle_timer is None and not self._closed:
            # Readers of old snapshots or an error: try again after the next quiet spell.
            loop = asyncio.get_running_loop()
            self._idle_timer = loop.call_later(self.idle_seconds, self._when_quiet)

    def _start(self, mode: str) -> asyncio.Future[bool]:
        running = asyncio.get_running_loop().run_in_executor(self._thread, self._run, mode)
        self._running = running
        return running

    def _busy(self) -> bool:
        return self._running is not None and not self._running.done()

    def _wal_size(self) -> int:
        try:
            return os.stat(self._wal_path).st_size
        except OSError:
            return 0

    def _wal_state(self) -> tuple[int, int]:
        try:
            found = os.stat(self._wal_path)
        except OSError:
            return 0, 0
        return found.st_size, found.st_mtime_ns

    def _run(self, mode: str) -> bool:
        """One checkpoint on the checkpoint thread; whether it went through completely.
        The thread keeps its connection (opening one per checkpoint cost about a tenth
        of a millisecond per upload); one that failed is closed and opened anew."""
        try:
            if self._raw is None:
                self._raw = connect(self.path, self.durability, create=False)
                # Only TRUNCATE waits for readers; PASSIVE never calls the busy handler.
                self._raw.execute(f"PRAGMA busy_timeout = {TRUNCATE_BUSY_MS}")
            blocked = self._raw.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()[0]
        except sqlite3.Error:
            self._close_connection()
            return False  # busy or failing now: tried again later
        return not blocked

    def _close_connection(self) -> None:
        if self._raw is not None:
            raw, self._raw = self._raw, None
            raw.close()

    def close(self) -> None:
        """Stop the timer and wait for a checkpoint under way."""
        self._closed = True
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self._watch_timer is not None:
            self._watch_timer.cancel()
            self._watch_timer = None
        self._thread.shutdown(wait=True)
        self._close_connection()
