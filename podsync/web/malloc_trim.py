"""Give the C heap's free pages back to the system now and then (glibc only).

A request that reads much (a statistics page over a long history, a big pull, a
burst of SQLite readers) leaves the memory it freed inside glibc's heap, between
blocks still in use: glibc returns only the free space at the top of its heap, so
a worker's RSS stays at the high-water mark of its busiest requests and creeps up
with the histories it serves. Heap reports of a soak showed it: the same 55-60 MiB
in use after hours, 25-30 MiB of it free and still resident. `malloc_trim(0)`
releases the free pages anywhere in the heap (milliseconds to tens of them for a
heap of 100 MiB), so every TRIM_EVERY_S each process calls it, on a thread.

`PODSYNC_MALLOC_TRIM_SECONDS` changes the period (0: never), for measuring what it
does (bench/soak); on a C library without `malloc_trim` (musl) nothing is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import os
from collections.abc import Callable

log = logging.getLogger("podsync")
TRIM_EVERY_S = 60.0
ENV = "PODSYNC_MALLOC_TRIM_SECONDS"


def _trimmer() -> Callable[[], object] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


def period() -> float:
    try:
        return max(0.0, float(os.environ.get(ENV, TRIM_EVERY_S)))
    except ValueError:
        return TRIM_EVERY_S


def start() -> asyncio.Task[None] | None:
    """Trim every period() seconds until the returned task is cancelled (None: off)."""
    every = period()
    trim = _trimmer() if every else None
    if trim is None:
        return None
    return asyncio.get_running_loop().create_task(_every(every, trim), name="malloc-trim")


async def _every(seconds: float, trim: Callable[[], object]) -> None:
    while True:
        await asyncio.sleep(seconds)
        # On a thread: ctypes lets the GIL go, and the loop goes on meanwhile.
        await asyncio.to_thread(trim)


async def stop(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
