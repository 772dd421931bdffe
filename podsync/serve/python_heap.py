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
longer for it (a few thousand objects at most).
"""

from __future__ import annotations

import gc

# Container objects allocated (less those freed) between collections of the youngest
# generation: CPython's default is 700 (2,000 from 3.13 on).
YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """Call when a process has started serving: the objects made so far (the app,
    modules, caches) are frozen out of every collection, and the young generation's
    threshold raised. Called again (a reload), the app before is collected first."""
    gc.unfreeze()  # what a start before froze may be garbage now (a reload)
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
