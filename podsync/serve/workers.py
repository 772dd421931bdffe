"""Several worker processes on one address and one database (`server.workers`).

The parent binds the address once (`server.listen`), then forks the workers: each
inherits the listening sockets and is a whole podsync with its own event loop,
database connections and memory (`server.serve_worker`); the kernel hands each new
connection to whichever worker accepts it first, one at a time (`server._Listening`),
so a burst of connections is shared. Worker 0 is the leader: it alone runs the
background tasks (`web/process.py`). The parent serves nothing and opens no
database; it only watches:

- SIGTERM or SIGINT: every worker gets SIGTERM, finishes its requests
  (`server.shutdown_timeout`) and exits; the parent then exits 0. A worker still
  running after that (and a few seconds more) is killed.
- SIGHUP (`systemctl reload`): the configuration is read again, and the workers are
  replaced one at a time with it (each finishes its requests first); the others
  serve meanwhile. When the first new worker does not start, it is started again
  with the configuration before, and the reload ends there (logged).
- A worker that dies is logged and replaced; one that keeps dying within seconds of
  its start is started again after a pause that doubles, up to a minute. A worker
  that fails before the server has ever served (a database that cannot be opened, a
  schema too new) stops the whole server: it has printed why, and the parent exits 1.
- When the parent dies, each worker sees its lifeline pipe end and stops.

Plain `os.fork`, no `multiprocessing`: the parent has no thread and no event loop
when it forks, and a frozen one-file binary forks as any Python does. The first
worker starts (and migrates the database) before the others.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass

from podsync import __version__
from podsync.config import Config, describe_database
from podsync.serve.fork import HANDLED, WorkerMain, fork_worker, how_it_ended
from podsync.serve.server import ReloadConfig, read_again, urls
from podsync.web.process import Worker

log = logging.getLogger("podsync")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# The seconds past server.shutdown_timeout a stopping worker gets before SIGKILL.
STOP_GRACE_S = 5.0
# A worker that dies sooner than this after its start is restarted after a pause.
EARLY_DEATH_S = 10.0
MAX_PAUSE_S = 60.0


@dataclass
class _Slot:
    index: int
    config: Config
    pid: int = 0
    ready_fd: int = -1  # the parent's end of the readiness pipe, until it is read
    ready: bool = False
    started_at: float = 0.0
    early_deaths: int = 0  # in a row, each soon after its start
    start_at: float | None = None  # a start that waits out that pause
    replacing: Config | None = None  # stopped by a reload: start again with this


class Supervisor:
    def __init__(
        self,
        config: Config,
        sockets: list[socket.socket],
        main: WorkerMain,
        reload_config: ReloadConfig | None = None,
        new_database: bool = False,
        config_file: str = "",
    ) -> None:
        self.config = config
        self.sockets = sockets
        self.main = main
        self.reload_config = reload_config
        self.new_database = new_database
        self.config_file = config_file
        self.slots: list[_Slot] = []
        self.selector = selectors.DefaultSelector()
        self.served = False  # every worker of the first start has been ready
        self.stopping = False
        self.failed = False
        self.reloading: list[int] = []  # slots still to replace in a reload
        self.before: Config | None = None  # the configuration a reload started from
        self.shared_dir = ""
        self.leaving: list[_Slot] = []  # past the count after a reload, stopping
        self.deadline = 0.0  # when stopping: the workers still running are killed then
        self._wake_r, self._wake_w = os.pipe()
        self._life_r, self._life_w = os.pipe()

    # The parent's loop ---------------------------------------------------------

    def run(self) -> int:
        """Start the workers and watch them until the server stops; the exit status."""
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.selector.register(self._wake_r, selectors.EVENT_READ)
        previous = {sig: signal.signal(sig, _note) for sig in HANDLED}
        old_wakeup = signal.set_wakeup_fd(self._wake_w)
        # The workers' write turn and metrics (owner-only, gone when the server stops).
        self.shared_dir = tempfile.mkdtemp(prefix="podsync-workers-")
        try:
            self._resize(self.config)
            while self.slots and not (self.stopping and not self._alive()):
                self._step()
        finally:
            self._kill_all()
            signal.set_wakeup_fd(old_wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.selector.close()
            for fd in (self._wake_r, self._wake_w, self._life_r, self._life_w):
                os.close(fd)
            if self.shared_dir:
                shutil.rmtree(self.shared_dir, ignore_errors=True)
        if self.failed:
            return 1
        log.info("stopped")
        return 0

    def _step(self) -> None:
        now = time.monotonic()
        waits = [s.start_at - now for s in self.slots if s.start_at is not None]
        if self.stopping:
            waits.append(self.deadline - now)
        timeout = max(0.0, min(waits, default=1.0))
        for key, _ in self.selector.select(timeout):
            if key.fd == self._wake_r:
                self._signals()
            else:
                self._readiness(key.fd)
        self._reap()
        now = time.monotonic()
        for slot in self.slots:
            if slot.start_at is not None and slot.start_at <= now and not self.stopping:
                slot.start_at = None
                self._start(slot)
        if self.stopping and now >= self.deadline:
            self._kill_all()

    def _signals(self) -> None:
        try:
            received = os.read(self._wake_r, 512)
        except BlockingIOError:
            return
        for number in received:
            if number in STOP_SIGNALS and not self.stopping:
                log.info("shutting down")
                self._stop_all()
            elif number == signal.SIGHUP and not self.stopping:
                if self.served:
                    self._reload()
                else:  # the workers are starting with the configuration just read
                    log.warning("SIGHUP while the workers start: nothing to reload yet")

    # Starting, readiness, deaths -----------------------------------------------

    def _start(self, slot: _Slot) -> None:
        worker = Worker(
            index=slot.index,
            count=len(self.slots),
            lifeline_fd=self._life_r,
            shared_dir=self.shared_dir,
        )
        parents = [self._wake_r, self._wake_w, self._life_w]
        parents += [s.ready_fd for s in self.slots if s.ready_fd >= 0]
        pid, ready_r = fork_worker(self.main, slot.config, self.sockets, worker, parents)
        slot.pid, slot.ready_fd, slot.ready = pid, ready_r, False
        slot.started_at = time.monotonic()
        self.selector.register(ready_r, selectors.EVENT_READ)

    def _readiness(self, fd: int) -> None:
        """A worker's readiness pipe: one byte once it serves, or end-of-file."""
        answer = b""
        with contextlib.suppress(OSError):
            answer = os.read(fd, 1)
        self.selector.unregister(fd)
        os.close(fd)  # its number may be reused by the next pipe from here on
        slot = next(s for s in self.slots if s.ready_fd == fd)
        slot.ready_fd = -1
        if answer == b"r":
            self._ready(slot)

    def _ready(self, slot: _Slot) -> None:
        slot.ready = True
        if not self.served:
            if slot.index == 0:  # it migrated the database: the others may start
                for other in self.slots[1:]:
                    self._start(other)
            if all(s.ready for s in self.slots):
                self.served = True
                self._started_line()
            return
        if self.reloading and self.reloading[0] == slot.index:
            self.reloading.pop(0)
            self._next_replacement()

    def _started_line(self) -> None:
        if self.new_database:
            log.info("created database at %s", describe_database(self.config))
        log.info(
            "podsync %s listening on %s (database %s; config %s; %d workers, pids %s)",
            __version__,
            ", ".join(urls(self.config, self.sockets)),
            describe_database(self.config),
            self.config_file or "none, built-in defaults",
            len(self.slots),
            " ".join(str(s.pid) for s in self.slots),
        )

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for slot in self.slots:
                if slot.pid == pid:
                    self._ended(slot, status)
                    break
            self.leaving = [s for s in self.leaving if s.pid != pid]

    def _ended(self, slot: _Slot, status: int) -> None:
        pid, slot.pid = slot.pid, 0
        if slot.ready_fd >= 0:
            self.selector.unregister(slot.ready_fd)
            os.close(slot.ready_fd)
            slot.ready_fd = -1
        was_ready, slot.ready = slot.ready, False
        if self.stopping:
            return
        if slot.replacing is not None:  # stopped by a reload: start its successor
            slot.config, slot.replacing = slot.replacing, None
            self._start(slot)
            return
        how = how_it_ended(status)
        if not self.served:
            log.error("worker %d %s before it served: stopping", slot.index, how)
            self.failed = True
            self._stop_all()
            return
        if self.reloading and self.reloading[0] == slot.index and not was_ready:
            self._reload_failed(slot, how)
            return
        early = time.monotonic() - slot.started_at < EARLY_DEATH_S
        slot.early_deaths = slot.early_deaths + 1 if early else 0
        # At once; after a second death in a row soon after its start, 1 s, then 2 s...
        pause = min(2.0 ** (slot.early_deaths - 2), MAX_PAUSE_S) if slot.early_deaths > 1 else 0
        log.error(
            "worker %d (pid %d) %s; starting another%s",
            slot.index,
            pid,
            how,
            f" in {pause:.0f} s" if pause else "",
        )
        slot.start_at = time.monotonic() + pause

    # Reload -------------------------------------------------------------------

    def _reload(self) -> None:
        if self.reload_config is None:
            log.warning("SIGHUP: this server has no configuration to read again")
            return
        new = read_again(self.reload_config, self.config)
        if new is None:
            return
        log.info("SIGHUP: replacing the workers one at a time with the configuration read again")
        self.before = self.before if self.reloading else self.config
        self.config = new
        self._resize(new)
        self.reloading = [s.index for s in self.slots]
        self._next_replacement()

    def _next_replacement(self) -> None:
        while self.reloading:
            slot = self.slots[self.reloading[0]]
            if slot.config is self.config and (slot.pid or slot.start_at is not None):
                self.reloading.pop(0)  # started with it already (a new slot)
                continue
            if slot.pid == 0:  # dead meanwhile: start it with the new one
                slot.config, slot.start_at = self.config, None
                self._start(slot)
                return
            slot.replacing = self.config
            os.kill(slot.pid, signal.SIGTERM)
            return
        self.before = None
        log.info("reloaded the configuration")

    def _reload_failed(self, slot: _Slot, how: str) -> None:
        log.error(
            "worker %d %s with the configuration read again; the reload stops here, "
            "and the workers serve with the configuration before",
            slot.index,
            how,
        )
        assert self.before is not None
        self.config, self.before = self.before, None
        self.reloading = []
        slot.config = self.config
        slot.start_at = time.monotonic() + 1.0

    def _resize(self, config: Config) -> None:
        """Have `config.server.workers` slots: new ones start (the first start: only
        slot 0 now, the others once it is ready); those past the count stop."""
        wanted = config.server.workers
        while len(self.slots) > wanted:
            extra = self.slots.pop()
            if extra.pid:
                extra.replacing = None
                os.kill(extra.pid, signal.SIGTERM)
                self.leaving.append(extra)
        first_start = not self.slots
        added = [_Slot(index, config) for index in range(len(self.slots), wanted)]
        self.slots += added
        for slot in added[:1] if first_start else added:
            self._start(slot)

    # Stopping -----------------------------------------------------------------

    def _alive(self) -> bool:
        return any(s.pid for s in self.slots + self.leaving)

    def _stop_all(self) -> None:
        self.stopping = True
        self.deadline = time.monotonic() + self.config.server.shutdown_timeout + STOP_GRACE_S
        for slot in self.slots:
            slot.start_at = None
            if slot.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, signal.SIGTERM)

    def _kill_all(self) -> None:
        for slot in self.slots + self.leaving:
            if slot.pid:
                log.warning("worker %d (pid %d) did not stop in time: killed", slot.index, slot.pid)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(slot.pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(slot.pid, 0)
                slot.pid = 0


def _note(signum: int, frame: object) -> None:
    """The signal's number reaches the loop through the wakeup pipe."""


def supervise(
    config: Config,
    sockets: list[socket.socket],
    main: WorkerMain,
    reload_config: ReloadConfig | None = None,
    new_database: bool = False,
    config_file: str = "",
) -> int:
    """Run `config.server.workers` workers on `sockets` until SIGTERM or SIGINT; the
    exit status (1 when the first start failed)."""
    supervisor = Supervisor(config, sockets, main, reload_config, new_database, config_file)
    return supervisor.run()
