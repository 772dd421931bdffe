"""Python's garbage collector in a serving process (`podsync/serve/python_heap.py`):
what the start made is frozen out of the collections, the young generation is
collected less often, cycles made later are still freed, and a reload's settle
frees the app before it. Each case runs in a fresh interpreter: the collector's
state is the process's, and pytest's own heap is not a server's."""

from __future__ import annotations

import json
import subprocess
import sys

SETTLED = """
import gc, json, weakref
from podsync.serve import python_heap

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)

old_app = cycle()  # garbage of a start before, not collected yet
gc.disable()  # nothing collects behind the test's back
gc.freeze()  # as a first settle() left it
python_heap.settle()  # a reload: the frozen app before is garbage now
freed_at_reload = old_app() is None
frozen = gc.get_freeze_count()
later = cycle()  # a request's cycle, made after the start
collected = gc.collect()
print(json.dumps({
    "freed_at_reload": freed_at_reload,
    "frozen": frozen,
    "young_threshold": gc.get_threshold()[0],
    "later_freed": later() is None and collected > 0,
}))
"""


def test_settle_freezes_the_start_and_raises_the_young_threshold() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SETTLED], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["frozen"] > 1000, got  # the interpreter's and podsync's own objects
    assert got["young_threshold"] == 10_000, got
    assert got["freed_at_reload"], got
    assert got["later_freed"], got
