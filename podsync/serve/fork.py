"""Forking one worker (`serve/workers.py`): the child drops what is the parent's,
runs the worker and exits; a wait status in words."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import NoReturn

from podsync.config import Config
from podsync.web.process import Worker

log = logging.getLogger("podsync")
# The signals the parent handles; blocked around a fork (see fork_worker).
HANDLED = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD}


# What a worker runs in the child after the fork; its exit status.
WorkerMain = Callable[[Config, list[socket.socket], Worker], int]


def fork_worker(
    main: WorkerMain,
    config: Config,
    sockets: list[socket.socket],
    worker: Worker,
    parents: list[int],
) -> tuple[int, int]:
    """Fork a worker that runs `main`; (its pid, the parent's end of its readiness
    pipe). `parents`: the parent's own descriptors, closed in the child."""
    ready_r, ready_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    # Until the child has its own handlers, a signal must wait: the parent's would
    # only note it in the parent's pipe, and a SIGTERM would be lost.
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            _become_worker(main, config, sockets, replace(worker, ready_fd=ready_w), parents)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
    os.close(ready_w)
    return pid, ready_r


def _become_worker(
    main: WorkerMain,
    config: Config,
    sockets: list[socket.socket],
    worker: Worker,
    parents: list[int],
) -> NoReturn:
    """In the child: drop what is the parent's, run the worker, exit."""
    status = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        # A SIGTERM before the worker's own handler is up ends it at once.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # The parent turns these into a stop or a reload of every worker.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)
        for fd in parents:
            if fd not in (worker.ready_fd, worker.lifeline_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)
        status = main(config, sockets, worker)
    except BaseException:
        log.exception("worker %d failed", worker.index)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)


def how_it_ended(status: int) -> str:
    """A wait status in words: "was killed by signal 9 (SIGKILL)", "exited with status 1"."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        return f"was killed by signal {number} ({name})"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"
