"""Long work on the event loop that lets the other requests in now and then.

An app's first sync uploads a long history in bodies of thousands of actions, and
their parse, lookups, rows and statistics ran on the event loop from the body to
the COMMIT: 70-120 ms for 4,000 plays on a desktop core (a few times that on a
Raspberry Pi), during which every other request of the process waited. Work that
may run long marks itself with `sharing()`; inside it, `share()` (called between
its statements and every few hundred items of its loops) gives the event loop one
pass once the task has held it for `HOLD_S` since its last pass. A write block
keeps its lock and its transaction meanwhile: only reads and requests that do not
write get in, and other writes wait for the block as before.

Outside `sharing()` a check is one ContextVar read: a short request never looks at
the clock, and nothing changes for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from time import perf_counter
from typing import TypeVar

HOLD_S = 0.002  # the longest a sharing task runs between two passes, give or take a step
EVERY = 256  # items of a loop between two checks (a few hundred µs of work here)

T = TypeVar("T")


class _Turn:
    __slots__ = ("passes", "since")

    def __init__(self) -> None:
        self.since = perf_counter()
        self.passes = 0


_TURN: ContextVar[_Turn | None] = ContextVar("podsync_loop_share", default=None)


@contextmanager
def sharing() -> Iterator[None]:
    """Mark the current task's work as long: `share()` gives passes inside it. Nested,
    the outer one counts."""
    if _TURN.get() is not None:
        yield
        return
    token = _TURN.set(_Turn())
    try:
        yield
    finally:
        _TURN.reset(token)


def due() -> bool:
    """Whether a sharing task has held the loop past `HOLD_S`."""
    turn = _TURN.get()
    return turn is not None and perf_counter() - turn.since > HOLD_S


async def share() -> None:
    """One pass of the event loop when due (see `due`)."""
    turn = _TURN.get()
    if turn is not None and perf_counter() - turn.since > HOLD_S:
        await asyncio.sleep(0)
        turn.passes += 1
        turn.since = perf_counter()


def pieces(items: Sequence[T]) -> Iterator[tuple[int, Sequence[T]]]:
    """`items` EVERY at a time, each piece with the place of its first item: a long
    loop runs `for first, piece in pieces(items)`, shares between two pieces (`if
    first: await share()`) and costs nothing more an item."""
    for first in range(0, len(items), EVERY):
        yield first, items[first : first + EVERY]


def passes() -> int:
    """Passes given so far by the current `sharing()` (0 outside one)."""
    turn = _TURN.get()
    return 0 if turn is None else turn.passes
