"""`podsync` with a meter on SQLite's write turn, for bench/opa_writes.py.

    python bench/turn_probe.py --config FILE serve     # as `python -m podsync ...`

Each serving process counts, in a small file of its own under $BENCH_TURN_DIR
(`turn-PID`, seven 64-bit integers), how long it held the write turn: with several
workers from taking the turn's `flock` to giving it back
(`sqlite_write_turn.WriteTurn`); alone, from the group's BEGIN IMMEDIATE to the end
of its COMMIT step (`Database._commit`). The integers: nanoseconds the turn was
held, turns (group transactions), write blocks, nanoseconds inside write blocks,
nanoseconds in the groups' COMMIT step, then nanoseconds and calls of the writer's
log restarts (`Checkpointer.restart`, in the COMMIT step, under the turn). The
counters live in a shared mapping, so reading them costs the server nothing; the
bench reads them before and after a run. Nothing of podsync changes but these
wrappers around the turn, the group's begin and commit, the restart and
`Database.write`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

_FORMAT = "<qqqqqqq"
_state: dict[int, tuple[mmap.mmap, list[int]]] = {}


def _counters() -> tuple[mmap.mmap, list[int]]:
    """This process's mapping and counters (a forked worker makes its own)."""
    pid = os.getpid()
    found = _state.get(pid)
    if found is None:
        path = Path(os.environ["BENCH_TURN_DIR"]) / f"turn-{pid}"
        with path.open("wb") as out:
            out.write(bytes(struct.calcsize(_FORMAT)))
        with path.open("r+b") as f:
            found = (mmap.mmap(f.fileno(), 0), [0, 0, 0, 0, 0, 0, 0])
        _state[pid] = found
    return found


def _publish(mapped: mmap.mmap, counts: list[int]) -> None:
    struct.pack_into(_FORMAT, mapped, 0, *counts)


def _wrap() -> None:
    from podsync.storage import sqlite, sqlite_checkpoint, sqlite_write_turn

    database, turn = sqlite.Database, sqlite_write_turn.WriteTurn
    taken: dict[int, int] = {}  # id(holder) -> when it took the turn or opened its group

    def held_from(holder: object) -> None:
        taken[id(holder)] = time.perf_counter_ns()

    def held_until(holder: object) -> None:
        t0 = taken.pop(id(holder), None)
        if t0 is not None:
            mapped, counts = _counters()
            counts[0] += time.perf_counter_ns() - t0
            counts[1] += 1
            _publish(mapped, counts)

    # With several workers the turn is the flock (given back wherever the code gives
    # it: on the loop or on the commit thread); alone, the group transaction.
    try_take: Callable[..., bool] = turn.try_take
    take: Callable[..., None] = turn.take
    give: Callable[..., None] = turn.give

    def timed_try_take(self: Any) -> bool:
        if try_take(self):
            held_from(self)
            return True
        return False

    def timed_take(self: Any) -> None:
        take(self)
        held_from(self)

    def timed_give(self: Any) -> None:
        held_until(self)
        give(self)

    turn.try_take = timed_try_take  # type: ignore[method-assign]
    turn.take = timed_take  # type: ignore[method-assign]
    turn.give = timed_give  # type: ignore[method-assign]

    def alone(self: Any) -> bool:
        return getattr(self, "_turn", None) is None

    begin: Callable[..., Any] = database._begin
    begin_now: Callable[..., bool] | None = getattr(database, "_begin_now", None)
    commit: Callable[..., Any] = database._commit
    end_group: Callable[..., Any] = database._end_group
    write: Callable[..., Any] = database.write

    async def timed_begin(self: Any, raw: Any) -> None:
        await begin(self, raw)
        if alone(self):
            held_from(self)

    def timed_begin_now(self: Any, raw: Any) -> bool:
        assert begin_now is not None
        opened = begin_now(self, raw)
        if opened and alone(self):
            held_from(self)
        return opened

    def timed_commit(self: Any, raw: Any, group: Any) -> Any:
        step = commit(self, raw, group)  # called now: the code may start its COMMIT here

        async def run() -> None:
            try:
                await step
            finally:
                if alone(self):
                    held_until(self)

        return run()

    @contextlib.asynccontextmanager
    async def counted_write(self: Any, **options: Any) -> AsyncIterator[Any]:
        mapped, counts = _counters()
        counts[2] += 1
        async with write(self, **options) as conn:  # user=, threaded=
            t0 = time.perf_counter_ns()
            try:
                yield conn
            finally:
                counts[3] += time.perf_counter_ns() - t0
        _publish(mapped, counts)

    async def timed_end_group(self: Any, *args: Any) -> None:
        t0 = time.perf_counter_ns()
        try:
            await end_group(self, *args)
        finally:
            _mapped, counts = _counters()
            counts[4] += time.perf_counter_ns() - t0

    restart: Callable[..., None] = sqlite_checkpoint.Checkpointer.restart

    def timed_restart(self: Any, writer: Any) -> None:
        t0 = time.perf_counter_ns()
        try:
            restart(self, writer)
        finally:
            mapped, counts = _counters()
            counts[5] += time.perf_counter_ns() - t0
            counts[6] += 1
            _publish(mapped, counts)

    sqlite_checkpoint.Checkpointer.restart = timed_restart  # type: ignore[method-assign]
    database._begin = timed_begin  # type: ignore[method-assign]
    if begin_now is not None:
        database._begin_now = timed_begin_now  # type: ignore[attr-defined]
    database._commit = timed_commit  # type: ignore[method-assign]
    database.write = counted_write  # type: ignore[method-assign]
    database._end_group = timed_end_group  # type: ignore[method-assign,assignment]


def read_all(directory: Path) -> dict[int, tuple[int, ...]]:
    """Every process's counters: {pid: (held ns, turns, write blocks, block ns,
    commit ns, restart ns, restarts)}."""
    found: dict[int, tuple[int, ...]] = {}
    for path in directory.glob("turn-*"):
        data = path.read_bytes()
        if len(data) >= struct.calcsize(_FORMAT):
            found[int(path.name.removeprefix("turn-"))] = struct.unpack_from(_FORMAT, data)
    return found


if __name__ == "__main__":
    _wrap()
    from podsync.cli import main

    main()
