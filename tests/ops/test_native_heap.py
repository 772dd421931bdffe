"""glibc's malloc in a serving process (`podsync/serve/native_heap.py`): the mmap
threshold stays fixed, free pages inside the heaps go back to the system, and every
serving process does both. A soak of hours grew a worker 14-22 MiB an hour in memory
freed but kept inside malloc's heaps (docs/performance.md, "The long soak")."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from podsync.serve import native_heap
from tests.support.http_calls import call
from tests.support.workers_support import ServerTree

pytestmark = pytest.mark.skipif(
    not native_heap.available(), reason="needs glibc's malloc (mallopt, malloc_trim)"
)

# Runs in a fresh interpreter: a test's own heap is the pytest process's, shared.
FRAGMENT = """
import json, sys
from podsync.serve import native_heap

def resident():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("RssAnon")) // 1024

before = resident()
# 200 MB of 3 KB blocks (above Python's small-object allocator: malloc's own), one in
# 50 kept: the heap is left full of holes between live blocks, as transient work does.
blocks = [bytes(3000) for _ in range(70_000)]
kept = blocks[::50]
del blocks
holes = resident()
trimmed = native_heap.trim_now()
print(json.dumps({"before": before, "holes": holes, "after": resident(), "trimmed": trimmed}))
"""

# Whether a 200 KiB block is mapped on its own after a 1 MiB one was freed: glibc's
# moving threshold rises to 1 MiB then, and the next big blocks grow the heap.
THRESHOLD = """
import ctypes, json, sys
from podsync.serve import native_heap
from podsync.serve.heap_report import _mallinfo2

if sys.argv[1] == "tuned":
    assert native_heap.tune()
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = _mallinfo2()
big = bytearray(1 << 20)
del big
# A block above the threshold is still cut from the heap's top when the top has room
# (malloc maps only what the heap cannot give): trim the top away first, as a heap
# full of live blocks has it.
libc.malloc_trim(0)
mapped = libc.mallinfo2().hblks
block = bytearray(200 << 10)
print(json.dumps({"mapped_more": libc.mallinfo2().hblks - mapped}))
"""


def _run(code: str, *args: str) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, int] = json.loads(done.stdout)
    return result


def test_a_trim_gives_back_the_free_pages_between_live_blocks() -> None:
    got = _run(FRAGMENT)
    assert got["trimmed"]
    held = got["holes"] - got["before"]
    assert held > 150, got  # MiB: freed, still resident, as the soak's workers kept it
    assert got["after"] - got["before"] < held // 4, got


def test_the_tuned_mmap_threshold_stays_where_it_was_set() -> None:
    # The control: glibc's own moving threshold keeps the block in the heap...
    assert _run(THRESHOLD, "default")["mapped_more"] == 0
    # ...and the tuned one maps it on its own, to be unmapped when it is freed.
    assert _run(THRESHOLD, "tuned")["mapped_more"] == 1


TRIMMING = re.compile(r"^malloc: mmap threshold 128 KiB; free pages given back every 60 s$")


@pytest.mark.parametrize("workers", [1, 2])
def test_every_serving_process_tunes_and_trims_its_heap(tmp_path: Path, workers: int) -> None:
    """One server alone, and each of two workers (tuned in the parent before the fork,
    trimmed in each worker)."""
    env = {"PODSYNC_LOG_LEVEL": "debug"}
    with ServerTree(tmp_path / "server", workers=workers, env=env) as tree:
        assert len(tree.wait_for(TRIMMING, workers)) == workers
        assert call("GET", f"{tree.base_url}/healthz").status == 200


# How many arenas malloc has after six threads, alive together, each allocated blocks
# too large for Python's own allocator (so they come from malloc, on the thread's arena).
ARENAS = """
import ctypes, json, sys, threading
from podsync.serve import native_heap

if sys.argv[1] == "tuned":
    assert native_heap.tune()
libc = ctypes.CDLL(None)
held, started, done = [], threading.Barrier(7), threading.Event()

def work():
    held.append([bytes(2000 + n) for n in range(100)])
    started.wait()
    done.wait()

threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads:
    t.start()
started.wait()
libc.open_memstream.restype = ctypes.c_void_p
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
size = ctypes.c_size_t()
buf = ctypes.c_char_p()
stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
libc.malloc_info(0, stream)
libc.fclose(stream)
done.set()
for t in threads:
    t.join()
print(json.dumps({"arenas": buf.value.decode().count("<heap nr=")}))
"""


def test_a_tuned_process_keeps_to_its_malloc_arenas() -> None:
    # The control: six threads get arenas of their own...
    assert _run(ARENAS, "default")["arenas"] > native_heap.ARENAS + 1
    # ...and, tuned, share the main heap.
    assert _run(ARENAS, "tuned")["arenas"] == native_heap.ARENAS
