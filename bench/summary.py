"""Summarise py-spy's raw (collapsed) stacks of a podsync server: where the time goes.

    python bench/summary.py STACKS --rate 200 --requests 4000

Each sample is one thread's stack at one moment. Samples of a thread that waits
(a selector with nothing to do, a worker thread on its empty queue, GIL or lock
waits) and of start-up imports are counted apart; the rest, "active" samples, are
given to a group: the group of the innermost frame that belongs to one, so a
`hmac` call inside itsdangerous counts as itsdangerous and a `json.dumps` inside
aiohttp as json. "ms/request" is active samples / rate / requests: the time some
thread of the server spent on that group per request (CPU, or runnable).
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path

# Groups by the frame's file (py-spy prints paths relative to sys.path). Order
# matters only where prefixes overlap. Files that match none (hmac, base64,
# typing, dataclass-made __init__) are not a group: the frame above decides.
FILE_GROUPS: tuple[tuple[str, str], ...] = (
    ("json/", "json"),
    ("itsdangerous/", "itsdangerous (cursors, tokens)"),
    ("argon2/", "argon2 (logins)"),
    ("sqlite3/", "SQL (statements, row fetch)"),
    ("podsync/store/", "SQL (statements, row fetch)"),
    ("podsync/db.py", "SQL (statements, row fetch)"),
    ("podsync/storage/", "SQL (statements, row fetch)"),
    ("aiosqlite/", "thread hops (aiosqlite, futures, wake-ups)"),
    ("concurrent/futures/", "thread hops (aiosqlite, futures, wake-ups)"),
    ("threading.py", "thread hops (aiosqlite, futures, wake-ups)"),
    ("queue.py", "thread hops (aiosqlite, futures, wake-ups)"),
    ("podsync/services/gpodder/", "gpodder services (parse, hash, cursors)"),
    ("podsync/services/sync.py", "rules (sync service)"),
    ("podsync/rules.py", "rules (sync service)"),
    ("podsync/model.py", "rules (sync service)"),
    ("podsync/feeds.py", "rules: feed URL checks, GUIDs (feeds.py)"),
    ("podsync/services/listing.py", "listing (rows to JSON-ready dicts)"),
    ("podsync/timestamps.py", "timestamps (format/parse)"),
    ("podsync/services/auth.py", "auth (token checks)"),
    ("podsync/web/", "podsync web (handlers, middleware, params)"),
    ("podsync/", "podsync, other"),
    ("aiohttp/", "aiohttp (HTTP parse, response, routing)"),
    ("multidict/", "aiohttp (HTTP parse, response, routing)"),
    ("yarl/", "aiohttp (HTTP parse, response, routing)"),
    ("asyncio/", "asyncio event loop"),
    ("selectors.py", "asyncio event loop"),
    ("logging/", "logging"),
)
HOPS = "thread hops (aiosqlite, futures, wake-ups)"
SQL = "SQL (statements, row fetch)"
# aiosqlite's functions that run a statement on its worker thread.
AIOSQLITE_SQL = ("Connection._execute_fetchall", "Connection._execute_insert")
# asyncio's own part of a thread hop: the wake-up written to, and read from, its
# self-pipe, and the futures that carry a result from a thread to the loop.
HOP_FUNCTIONS = ("call_soon_threadsafe", "_write_to_self", "_read_from_self", "_chain_future",
                 "_copy_future_state", "_call_set_state", "_set_state", "wrap_future")  # fmt: skip
# Native frames (py-spy --native): SQLite's C code, and what a waiting thread sits in.
NATIVE_SQL = re.compile(r"^(sqlite3|pysqlite_|_pysqlite|pager|btree|vdbe)", re.IGNORECASE)
WAIT_NATIVE = ("take_gil", "PyThread_acquire_lock_timed", "_queue_SimpleQueue_get", "epoll_wait")
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def _lines_of(module: str, needle: str) -> set[int]:
    """Line numbers of `module`'s source that contain `needle`: py-spy names lines,
    not calls, and the numbers differ between releases."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:  # aiosqlite: gone with the data-path rewrite
        return set()
    if spec is None or spec.origin is None:
        return set()
    lines = Path(spec.origin).read_text().splitlines()
    return {i + 1 for i, text in enumerate(lines) if needle in text}


def waiting_leaves() -> set[str]:
    """Leaf frames (function, file:line) of a thread that waits for work."""
    waits = set()
    for line in _lines_of("aiosqlite.core", "tx.get()"):
        waits.add(f"_connection_worker_thread (aiosqlite/core.py:{line})")
    for line in _lines_of("concurrent.futures.thread", "work_queue.get("):
        waits.add(f"_worker (concurrent/futures/thread.py:{line})")
    return waits


def sql_leaves() -> set[str]:
    """A worker thread inside a C function it was handed: aiosqlite's running a
    statement, or an executor's (podsync's committer) running e.g. a COMMIT."""
    lines = _lines_of("aiosqlite.core", "result = function()")
    leaves = {f"_connection_worker_thread (aiosqlite/core.py:{line})" for line in lines}
    for line in _lines_of("concurrent.futures.thread", "self.fn(*self.args"):
        leaves.add(f"_WorkItem.run (concurrent/futures/thread.py:{line})")
    return leaves


def parse(path: Path) -> Iterable[tuple[str, list[str], int]]:
    """(thread name, frames root first, samples) per line of py-spy's raw output."""
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        thread, *frames = stack.split(";")
        name = thread.partition(": ")[2] or "MainThread"  # unnamed: start-up, the main thread
        yield re.sub(r"[-_]\d+\b", "-N", name), frames, int(count)


def group_of(frames: list[str], waits: set[str], sql: set[str]) -> str:
    if not frames:
        return "other"
    leaf = frames[-1]
    if leaf in waits or leaf.startswith(("EpollSelector.select ", "Condition.wait ")):
        return "(waiting)"
    if any(f.split(" (")[0] in WAIT_NATIVE for f in frames[-6:]):
        return "(waiting)"
    if any("importlib._bootstrap" in f for f in frames):
        return "(start-up imports)"
    if leaf in sql:
        return SQL
    for frame in reversed(frames):
        m = FRAME.match(frame)
        if m is None:
            continue
        func, file = m["func"], m["file"]
        if NATIVE_SQL.match(func) or "libsqlite3" in file or "_sqlite3" in file:
            return SQL
        if file.startswith("aiosqlite/") and func in AIOSQLITE_SQL:
            return SQL
        if file.startswith("asyncio/") and func.rpartition(".")[2] in HOP_FUNCTIONS:
            return HOPS
        for prefix, group in FILE_GROUPS:
            if file.startswith(prefix):
                return group
    return "other"


def _table(counter: collections.Counter[str], total: int, rate: int, requests: int, n: int) -> str:
    rows = []
    for name, count in counter.most_common(n):
        per_request = 1000 * count / rate / max(requests, 1)
        rows.append(f"  {100 * count / total:5.1f}%  {per_request:7.3f} ms/req  {name}")
    return "\n".join(rows)


def summarise(stacks: Path, rate: int, requests: int, top: int) -> str:
    waits, sql = waiting_leaves(), sql_leaves()
    threads: collections.Counter[str] = collections.Counter()
    groups: collections.Counter[str] = collections.Counter()
    loop_groups: collections.Counter[str] = collections.Counter()
    apart: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    loop_total: collections.Counter[str] = collections.Counter()
    for thread, frames, count in parse(stacks):
        group = group_of(frames, waits, sql)
        if group.startswith("("):
            apart[f"{group} {thread}"] += count
            continue
        threads[thread] += count
        groups[group] += count
        named = [f for f in frames if not f.startswith("0x")]  # native: skip bare addresses
        if named:
            own[f"{named[-1]}  [{group}]"] += count
        if thread == "MainThread":
            loop_groups[group] += count
            functions = {re.sub(r":\d+\)$", ")", f) for f in frames}
            for function in functions:
                loop_total[function] += count
    active, loop = sum(threads.values()), sum(loop_groups.values())
    if not active:
        return "no active samples (did the server run? is py-spy allowed to trace it?)"
    # the frames every sample of the loop passes through say nothing
    skip = ("_run_module_as_main", "_run_code", "<module>", "click/", "podsync/cli/", "asyncio/",
            "0x", "(libc", "(libpython", "task_step", "_asynciomodule")  # fmt: skip
    interesting = collections.Counter(
        {f: n for f, n in loop_total.items() if not any(s in f for s in skip)}
    )
    parts = [
        f"{active} active samples ({active / rate:.1f} s of thread time), "
        f"{1000 * active / rate / max(requests, 1):.3f} ms per request; apart: "
        + ", ".join(f"{k} {v}" for k, v in apart.most_common()),
        "\nthreads (active samples):\n" + _table(threads, active, rate, requests, top),
        "\ngroups, all threads:\n" + _table(groups, active, rate, requests, top),
        "\ngroups, event-loop thread only:\n" + _table(loop_groups, loop, rate, requests, top),
        "\ntop frames by self time, all threads:\n" + _table(own, active, rate, requests, top),
        "\ntop functions by total time, event-loop thread (% of its samples):\n"
        + _table(interesting, loop, rate, requests, top),
    ]
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description="summarise py-spy raw stacks")
    parser.add_argument("stacks", type=Path)
    parser.add_argument("--rate", type=int, default=200, help="py-spy's --rate")
    parser.add_argument("--requests", type=int, default=1, help="requests served meanwhile")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    print(summarise(args.stacks, args.rate, args.requests, args.top))


if __name__ == "__main__":
    main()
