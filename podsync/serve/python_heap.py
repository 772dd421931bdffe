"""Python's cyclic garbage collector in a serving process: less of it per request.

Measured under the gpodder subscription push (docs/performance.md, "where a
subscription push's CPU goes"): with CPython's default thresholds the collector took
about 4% of a serving process's CPU. Two things made it cost that much:

- the youngest generation was collected every 700 container objects allocated and not
  yet freed. A request makes and drops thousands (rows, entities, tuples); with several
  requests in flight the count passed 700 many times a second, and each collection
  walked every young object still alive. At `YOUNG_THRESHOLD` the count rarely passes
  it: the objects are freed by their reference counts first (in-process, at 5,000:
  9 young collections where there were 541 for the same 4,400 pushes);
- the oldest generation, collected now and then, walked every object the process
  holds, the app, its modules and caches among them: about 16 ms each time. `settle()`
  moves what the start made into the permanent generation (`gc.freeze`), which no
  collection walks, so a full collection walks only what came after.

Cycles are still found and freed; garbage that is part of a cycle waits a little
longer for it. How much longer is what `keep_collected()` bounds. The young
threshold counts containers allocated and not yet freed, and under a steady load
what stays unfreed is mostly that garbage itself: a soak's worker (two workers, 20
requests a second) made one young collection and no older one in almost two hours,
while the cycles its requests left (closed connections' transports, template
contexts, the rows a traceback held) gathered: 4,808 objects, 8,000 of Python's
blocks, at minute 115, held for as long as they waited. A full collection every
`COLLECT_EVERY` seconds frees them while they are few; it walks only what came after
the start (the rest is frozen): 5-6 ms for 16,000 objects on the machine measured.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time

# Container objects allocated (less those freed) between collections of the youngest
# generation: CPython's default is 700 (2,000 from 3.13 on).
YOUNG_THRESHOLD = 10_000
COLLECT_EVERY = 600.0  # seconds between full collections of a serving process

log = logging.getLogger("podsync")


def settle() -> None:
    """Call when a process has started serving: the objects made so far (the app,
    modules, caches) are frozen out of every collection, and the young generation's
    threshold raised. Called again (a reload), the app before is collected first."""
    gc.unfreeze()  # what a start before froze may be garbage now (a reload)
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


async def keep_collected(every: float = COLLECT_EVERY) -> None:
    """A full collection every `every` seconds, on the event loop (the collector holds
    the interpreter's lock whatever thread runs it), until cancelled."""
    log.debug("collector: a full collection every %.0f s", every)
    while True:
        await asyncio.sleep(every)
        started = time.perf_counter()
        freed = gc.collect()
        took = time.perf_counter() - started
        if took > 0.05:
            log.debug("a full collection took %.0f ms (%d objects freed)", took * 1000, freed)
