"""Python's garbage collector in a serving process (`podsync/serve/python_heap.py`):
what the start made is frozen out of the collections, the young generation is
collected less often, cycles made later are still freed, and a reload's settle
frees the app before it, and a serving process collects the cycles left behind on a
timer, not only when the young threshold is passed. Each case runs in a fresh
interpreter: the collector's state is the process's, and pytest's own heap is not a
server's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.http_calls import call
from tests.support.workers_support import ServerTree

# Two objects that refer to each other: only the collector frees them.
CYCLE = """
import asyncio, gc, json, sys, weakref
from podsync.serve import python_heap

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)
"""

SETTLED = (
    CYCLE
    + """
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
)


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


# A cycle made after the start, with the automatic collections off (as the young
# threshold leaves them for hours under a steady load): freed by the timer alone.
TIMED = (
    CYCLE
    + """
async def main(timed):
    python_heap.settle()
    gc.disable()
    left = cycle()
    task = asyncio.create_task(python_heap.keep_collected(every=0.05)) if timed else None
    await asyncio.sleep(0.5)
    if task is not None:
        task.cancel()
    print(json.dumps({"freed": left() is None}))

asyncio.run(main(sys.argv[1] == "timed"))
"""
)


def _freed(mode: str) -> bool:
    done = subprocess.run(
        [sys.executable, "-c", TIMED, mode], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    freed: bool = json.loads(done.stdout)["freed"]
    return freed


def test_cycles_left_behind_are_collected_on_a_timer() -> None:
    assert not _freed("untimed")  # the control: nothing else collects it
    assert _freed("timed")


COLLECTING = re.compile(r"^collector: a full collection every 600 s$")


@pytest.mark.parametrize("workers", [1, 2])
def test_every_serving_process_collects_on_a_timer(tmp_path: Path, workers: int) -> None:
    env = {"PODSYNC_LOG_LEVEL": "debug"}
    with ServerTree(tmp_path / "server", workers=workers, env=env) as tree:
        assert len(tree.wait_for(COLLECTING, workers)) == workers
        assert call("GET", f"{tree.base_url}/healthz").status == 200
