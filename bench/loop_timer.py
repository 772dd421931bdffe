"""`python -m podsync ARGS` with every event-loop callback over 2 ms written down.

    LOOP_TIMER_LOG=FILE python bench/loop_timer.py --config podsync.toml serve

Each line of FILE: the callback's start (time.monotonic(), the same clock in every
process of the machine) and how long it held the loop, in ms. A bench that knows
when its requests ran reads the lines of that window (bench/list_stall.py). The
timing itself costs two clock reads a callback. Serve one process (workers = 1):
only the process that starts here is timed.
"""

from __future__ import annotations

import asyncio.events
import os
import runpy
import sys
import time
from typing import Any

LONG_S = 0.002


def install(path: str) -> None:
    """Time every callback the loop runs (asyncio's Handle, which tasks' steps use too)."""
    log = open(path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    run = asyncio.events.Handle._run
    clock = time.monotonic

    def timed_run(self: Any) -> None:
        started = clock()
        try:
            run(self)
        finally:
            took = clock() - started
            if took > LONG_S:
                log.write(f"{started:.6f} {took * 1000:.2f}\n")

    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]


if __name__ == "__main__":
    install(os.environ["LOOP_TIMER_LOG"])
    sys.argv = ["podsync", *sys.argv[1:]]
    runpy.run_module("podsync", run_name="__main__", alter_sys=True)
