"""A debugging aid, off unless asked for: where a running process's memory goes.

With `PODSYNC_DEBUG_HEAP_DIR=/some/dir` in the environment of `podsync serve`, each
process (every worker, or the one server) answers SIGUSR2 by writing a heap report
into that directory: its resident memory, the Python allocator's totals and, when
tracemalloc runs (`PYTHONTRACEMALLOC=N` in the same environment, N frames per
allocation), the snapshot itself (`heap-PID-N.tracemalloc`), which
`bench/soak/heap_diff.py` compares with an earlier one. The process stops serving
while it takes the snapshot (a second or more): grouping the sites is left to the
comparison, outside the server. Without the variable
nothing is installed and SIGUSR2 keeps its default meaning. Tracing costs CPU and
memory of its own: never leave it on in production (docs/development.md).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

from podsync.serve import HEAP_REPORT_DIR_ENV as ENV

log = logging.getLogger("podsync")


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Answer SIGUSR2 with a heap report when `PODSYNC_DEBUG_HEAP_DIR` names a directory."""
    where = os.environ.get(ENV)
    if not where:
        return
    folder = Path(where)
    counter = iter(range(1, 1_000_000))
    loop.add_signal_handler(signal.SIGUSR2, lambda: _report(folder, next(counter)))
    log.warning("debugging aid on: SIGUSR2 writes a heap report into %s", folder)


def uninstall(loop: asyncio.AbstractEventLoop) -> None:
    if os.environ.get(ENV):
        loop.remove_signal_handler(signal.SIGUSR2)


def _report(folder: Path, number: int) -> None:
    # Imported here: a server that is never asked for a report does not load them.
    import gc
    import sqlite3
    import sys
    import tracemalloc

    pid = os.getpid()
    lines = [f"pid {pid} report {number} at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}"]
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            lines += [line.rstrip() for line in status if line.startswith(("VmRSS", "RssAnon"))]
    except OSError:
        pass
    lines.append(f"allocated blocks: {sys.getallocatedblocks()}")
    lines += _python_allocator(folder / f"heap-{pid}-{number}.pymalloc.txt")
    lines += _native()
    lines += _malloc_free_sizes(folder / f"heap-{pid}-{number}.malloc.xml")
    lines.append(_collector())
    # gc.get_objects() leaves out what serve/python_heap.py froze at the start (the
    # connections among it): thawed for good, so the report counts them and no
    # cycle is kept from the collector while the heap is being looked into.
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    lines.append(f"objects frozen since the start, thawed by this report: {frozen}")
    connections = [o for o in gc.get_objects() if isinstance(o, sqlite3.Connection)]
    lines.append(f"sqlite3 connections: {len(connections)}")
    lines += _sqlite_per_connection(connections)
    lines += _statements(gc.get_objects(), folder / f"heap-{pid}-{number}.statements.txt")
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot()
        snapshot.dump(str(folder / f"heap-{pid}-{number}.tracemalloc"))
        current, peak = tracemalloc.get_traced_memory()
        lines.append(f"traced: {current / 2**20:.2f} MiB now, {peak / 2**20:.2f} MiB at the peak")
    else:
        lines.append("tracemalloc is off: start the server with PYTHONTRACEMALLOC=N")
    # Written aside and renamed: whoever waits for the report finds it whole.
    report = folder / f"heap-{pid}-{number}.txt"
    partial = report.with_suffix(".partial")
    partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
    partial.replace(report)


_PYMALLOC_FIGURES = {
    "arenas": r"# arenas allocated current\s*=\s*([\d,]+)",
    "highwater": r"# arenas highwater mark\s*=\s*([\d,]+)",
    "in_blocks": r"# bytes in allocated blocks\s*=\s*([\d,]+)",
    "free_blocks": r"# bytes in available blocks\s*=\s*([\d,]+)",
    "free_pools": r"unused pools \* \d+ bytes\s*=\s*([\d,]+)",
    "arena_size": r"arenas \* ([\d,]+) bytes/arena",
}


def _python_allocator(path: Path) -> list[str]:
    """Python's own allocator (objects up to 512 bytes, in arenas of 1 MiB): how full
    its arenas are. An arena goes back only once every object in it is gone, so live
    objects spread thin over many arenas hold memory that Python's count of blocks
    does not show. `sys._debugmallocstats` writes to the process's standard error: it
    is sent to `path` for the moment of the call (a line another thread logs then
    lands there too), and the figures read back from it."""
    import sys

    debug_stats = getattr(sys, "_debugmallocstats", None)
    if debug_stats is None:
        return ["python's allocator not read: no sys._debugmallocstats"]
    try:
        with open(path, "w+b") as out:
            sys.stderr.flush()
            saved = os.dup(2)
            try:
                os.dup2(out.fileno(), 2)
                debug_stats()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            out.seek(0)
            text = out.read().decode(errors="replace")
    except OSError as exc:
        return [f"python's allocator not read: {exc}"]
    found = {k: re.search(rx, text) for k, rx in _PYMALLOC_FIGURES.items()}
    if not all(found.values()):  # tracemalloc's hooks, or another allocator, hide them
        return [f"python's allocator: no figures of its arenas (see {path.name})"]
    n = {k: int(m.group(1).replace(",", "")) for k, m in found.items() if m}
    return [
        f"python's allocator: {n['arenas']} arenas of {n['arena_size'] // 1024} KiB "
        f"({n['highwater']} at the peak), "
        f"{n['in_blocks'] / 2**20:.2f} MiB in objects, {n['free_blocks'] / 2**20:.2f} free "
        f"in used pools, {n['free_pools'] / 2**20:.2f} in unused pools"
    ]


def _native() -> list[str]:
    """What SQLite holds (its own allocator's count) and what glibc's malloc holds in
    use and free: memory that tracemalloc does not see."""
    lines: list[str] = []
    try:  # imported here: a process that is never asked for a report does not load it
        import ctypes
    except ImportError:
        return ["native memory not read: this build has no ctypes"]
    try:
        lib = _sqlite_library()
        if lib is not None:
            lib.sqlite3_memory_used.restype = ctypes.c_int64
            lib.sqlite3_memory_highwater.restype = ctypes.c_int64
            used = lib.sqlite3_memory_used()
            high = lib.sqlite3_memory_highwater(0)
            lines.append(
                f"sqlite: {used / 2**20:.2f} MiB in use, {high / 2**20:.2f} MiB at the peak"
            )
        libc = _libc()
        libc.mallinfo2.restype = _mallinfo2()
        info = libc.mallinfo2()
        lines.append(
            f"malloc: {info.arena / 2**20:.2f} MiB in its heap, {info.uordblks / 2**20:.2f} "
            f"in use, {info.fordblks / 2**20:.2f} free, {info.hblkhd / 2**20:.2f} mmapped"
        )
    except (OSError, AttributeError) as exc:
        lines.append(f"native memory not read: {exc}")
    return lines


def _collector() -> str:
    """Python's garbage collector: its collections so far by generation, and the
    counts that start the next ones (how long cycles left behind have waited)."""
    import gc

    done = [stats["collections"] for stats in gc.get_stats()]
    return (
        f"collector: collections by generation {done}, counts now {list(gc.get_count())} "
        f"of thresholds {list(gc.get_threshold())}"
    )


@functools.cache
def _mallinfo2() -> Any:
    """glibc's `struct mallinfo2`: ten size_t counters."""
    import ctypes

    names = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"
    return type(
        "MallInfo2",
        (ctypes.Structure,),
        {"_fields_": [(n, ctypes.c_size_t) for n in names.split()]},
    )


# Sizes of free blocks, in bytes: a trim gives back only the whole pages inside a free
# block, so free memory in blocks under a page or two stays resident.
_FREE_SIZES = ((1024, "under 1 KiB"), (4096, "1-4 KiB"), (16384, "4-16 KiB"), (None, "above"))


def _malloc_free_sizes(path: Path) -> list[str]:
    """glibc's own account of its free blocks (`malloc_info`, kept beside the report
    as XML), summed by size over every arena: whether free memory lies in blocks too
    small for a trim to give back."""
    try:
        import ctypes
    except ImportError:
        return []
    try:
        libc = _libc()
        libc.fopen.restype = ctypes.c_void_p
        libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.fclose.argtypes = [ctypes.c_void_p]
        libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
        stream = libc.fopen(os.fsencode(path), b"w")
        if not stream:
            return [f"malloc_info not written to {path}"]
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        text = path.read_text(encoding="ascii", errors="replace")
    except (OSError, AttributeError) as exc:
        return [f"malloc_info not read: {exc}"]
    totals = [0] * len(_FREE_SIZES)
    # <size from="LOW" to="HIGH" total="BYTES" count="N"/> per heap and bin, and the
    # same for the blocks not yet sorted into bins (<unsorted .../>)
    found = re.findall(r'<(?:size|unsorted) from="(\d+)" to="\d+" total="(\d+)"', text)
    for low, total in found:
        top = next(i for i, (edge, _) in enumerate(_FREE_SIZES) if edge is None or int(low) < edge)
        totals[top] += int(total)
    parts = ", ".join(
        f"{total / 2**20:.2f} MiB {name}"
        for total, (_, name) in zip(totals, _FREE_SIZES, strict=True)
    )
    arenas = text.count("<heap nr=")
    return [f"malloc free blocks by size ({arenas} arenas): {parts}", *_heap_resident()]


def _heap_resident() -> list[str]:
    """How much of the main arena's heap (`[heap]` in smaps) is resident: what a trim
    left there."""
    try:
        with open("/proc/self/smaps", encoding="ascii", errors="replace") as smaps:
            lines = smaps.read().splitlines()
    except OSError:
        return []
    resident = mapped = 0
    for i, line in enumerate(lines):
        if line.endswith("[heap]"):  # split in parts where a trim changed some pages
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            rss = next((ln for ln in lines[i + 1 : i + 8] if ln.startswith("Rss:")), "Rss: 0 kB")
            resident += int(rss.split()[1]) * 1024
            mapped += end - start
    if not mapped:
        return []
    return [f"main heap: {resident / 2**20:.2f} MiB resident of {mapped / 2**20:.2f} mapped"]


# sqlite3_db_status() counters (<sqlite3.h>): bytes of the page cache, the schema and
# the prepared statements of one connection.
_DBSTATUS = (("cache", 1), ("schema", 2), ("statements", 3))


def _sqlite_per_connection(connections: list[Any]) -> list[str]:
    """What each open connection holds, by SQLite's own count. CPython's sqlite3
    keeps the `sqlite3 *` handle right after the object's header (NULL once closed);
    the handle is used only when SQLite names the file it has open through it.
    Connections are closed on the event loop, where this runs, so none closes
    meanwhile; sqlite3_db_status takes the connection's own mutex."""
    lib = _sqlite_library()
    if lib is None:
        return []
    import ctypes  # loaded by _sqlite_library

    try:
        lib.sqlite3_db_filename.restype = ctypes.c_char_p
        lib.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.sqlite3_db_status.argtypes = (
            [ctypes.c_void_p, ctypes.c_int] + [ctypes.POINTER(ctypes.c_int)] * 2 + [ctypes.c_int]
        )
    except (OSError, AttributeError):
        return []
    lines: list[str] = []
    for connection in connections:
        handle = _handle(connection)
        name = lib.sqlite3_db_filename(handle, b"main") if handle else None
        if not name:
            continue
        figures = []
        for label, op in _DBSTATUS:
            now, high = ctypes.c_int(), ctypes.c_int()
            lib.sqlite3_db_status(handle, op, ctypes.byref(now), ctypes.byref(high), 0)
            figures.append(f"{label} {now.value / 1024:.0f} KiB")
        lines.append(
            f"  connection {os.path.basename(name.decode(errors='replace'))}: " + ", ".join(figures)
        )
    return lines


def _statements(objects: list[Any], path: Path) -> list[str]:
    """The prepared statements that the writer and the idle readers of each SQLite
    database keep (connections in no one's use: a reader running on another thread
    could finalize one while it is walked), written to `path` one text a line with
    its length in bytes: which queries fill the statement caches."""
    try:
        from podsync.storage.sqlite import Database
    except ImportError:
        return []
    found: list[str] = []
    lines: list[str] = []
    for db in (o for o in objects if isinstance(o, Database)):
        for role, connection in [("writer", db._writer)] + [
            ("reader", r) for r in db._idle_readers
        ]:
            if connection is None:
                continue
            texts = prepared_statements(connection)
            lines.append(f"  {role}: {len(texts)} statements")
            found += [f"{role}\t{len(text)}\t{' '.join(text.split())}" for text in texts]
    path.write_text("\n".join(found) + "\n", encoding="utf-8")
    return lines


def prepared_statements(connection: Any) -> list[str]:
    """The SQL of every statement `connection` (a `sqlite3.Connection` open in this
    process, in no other thread's use) keeps prepared: its statement cache and any
    cursor not yet finished."""
    lib = _sqlite_library()
    if lib is None:
        return []
    import ctypes  # loaded by _sqlite_library

    try:
        lib.sqlite3_next_stmt.restype = ctypes.c_void_p
        lib.sqlite3_next_stmt.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.sqlite3_sql.restype = ctypes.c_char_p
        lib.sqlite3_sql.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return []
    handle = _handle(connection)
    texts: list[str] = []
    statement = lib.sqlite3_next_stmt(handle, None) if handle else None
    while statement:
        texts.append((lib.sqlite3_sql(statement) or b"").decode(errors="replace"))
        statement = lib.sqlite3_next_stmt(handle, statement)
    return texts


# The libraries and the structure's type are loaded once: each ctypes library made
# anew is a few classes that only a full collection frees, and a soak asking for a
# report every ten minutes counted them in its growth.
@functools.cache
def _libc() -> Any:
    """The process's own symbols (libc among them), through ctypes."""
    import ctypes

    return ctypes.CDLL(None)


@functools.cache
def _sqlite_library() -> Any:
    """The SQLite library Python's sqlite3 module itself uses (the one-file binary
    carries its own), through ctypes; None without ctypes."""
    try:
        import _sqlite3
        import ctypes
    except ImportError:
        return None
    try:
        return ctypes.CDLL(_sqlite3.__file__)  # its symbols and its libsqlite3's
    except OSError:
        return None


def _handle(connection: Any) -> int | None:
    """A `sqlite3.Connection`'s `sqlite3 *`: CPython keeps it right after the object's
    header, NULL once the connection is closed."""
    import ctypes

    header = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
    handle: int | None = ctypes.c_void_p.from_address(id(connection) + header).value
    return handle
