"""glibc's malloc in a server that runs for months: freed memory goes back.

A soak of hours (docs/performance.md, "The long soak") showed a worker's resident
memory growing while Python's own blocks stayed flat: the growth was memory that
had been freed but stayed inside malloc's heaps, in holes between live blocks
left by transient allocations (a burst's extra SQLite readers and their caches,
large responses, the feed parser's buffers on its thread). Two settings bound it:

- a fixed mmap threshold (`MMAP_THRESHOLD`). glibc's default threshold moves: each
  time a block above it is freed the threshold rises to that size, up to 32 MiB,
  and from then on such blocks come from the heap and leave holes there. Fixed,
  a block above it that the free space at the heap's top cannot give is mapped on
  its own and unmapped when freed;
- at most `ARENAS` malloc arenas. glibc gives each new thread an arena (a heap) of
  its own, up to eight a core, so that threads never wait on each other's malloc;
  a busy worker's reader and commit threads had nine, each with free space that
  only the threads on it reuse. Python's threads take turns on the GIL anyway:
  one arena (the main heap, shared by every thread) costs no measurable wait
  (two arenas measured the same CPU) and keeps all the free space in one heap,
  where any thread reuses it; soaks of two and a half hours grew less with one
  (docs/performance.md, "Two soaks of the timed collection");
- `malloc_trim(0)` every `TRIM_EVERY` seconds on a worker thread: it gives back
  (madvise) every whole page that is free inside the heaps of every arena, not
  only at a heap's top as free() itself does.

`tune()` is called once before the server forks its workers (they inherit it);
`keep_trimmed()` runs `trim_now()` for as long as a process serves. Off glibc
(musl, macOS), or where ctypes is missing, both do nothing: `available()` says so.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

log = logging.getLogger("podsync")

MMAP_THRESHOLD = 128 * 1024  # bytes: glibc's starting value, kept fixed
TRIM_EVERY = 60.0  # seconds between trims of a serving process
ARENAS = 1  # malloc arenas at most: the main heap alone
_M_MMAP_THRESHOLD = -3  # mallopt's parameter numbers (<malloc.h>)
_M_ARENA_MAX = -8

_libc: Any = None
_loaded = False


def _glibc() -> Any:
    """glibc as a ctypes library with mallopt and malloc_trim, or None."""
    global _libc, _loaded
    if _loaded:
        return _libc
    _loaded = True
    try:  # imported here: only a serving process needs it
        import ctypes
    except ImportError:
        return None
    try:
        libc = ctypes.CDLL(None)  # the process's own symbols: libc is among them
        mallopt, trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    _libc = libc
    return libc


def available() -> bool:
    """Whether this process's malloc is glibc's, reachable to tune and trim."""
    return _glibc() is not None


def tune() -> bool:
    """Fix the mmap threshold and bound the arenas (see the module's text); False
    where nothing is done. Call it before threads or workers start: they share or
    inherit the settings."""
    libc = _glibc()
    if libc is None:
        return False
    threshold = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    arenas = libc.mallopt(_M_ARENA_MAX, ARENAS)
    return bool(threshold and arenas)


def trim_now() -> bool:
    """Give the free pages inside malloc's heaps back to the system; whether any
    were (False also where nothing can be done). Blocks for the walk over the
    heaps (a millisecond or two for 100 MiB): call it off the event loop."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


async def keep_trimmed(every: float = TRIM_EVERY) -> None:
    """Trim at once (what starting up left free) and then every `every` seconds,
    each on a worker thread, until cancelled."""
    if not available():
        log.debug("malloc: not glibc's, or no ctypes: nothing tuned or trimmed")
        return
    log.debug(
        "malloc: mmap threshold %d KiB; free pages given back every %.0f s",
        MMAP_THRESHOLD // 1024,
        every,
    )
    while True:
        started = time.perf_counter()
        await asyncio.to_thread(trim_now)
        took = time.perf_counter() - started
        if took > 0.1:
            log.debug("malloc_trim took %.0f ms", took * 1000)
        await asyncio.sleep(every)
