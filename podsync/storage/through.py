"""A database step awaited to its end whatever cancels its caller (both engines)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def through(step: Awaitable[T]) -> T:
    """Await `step` to its end even when the caller is cancelled meanwhile, however many
    times, then let the cancellation through. A step that runs a statement on another
    thread must be over before its connection is used again: sqlite3 connections are
    not safe for two threads at once (a second cancel that let go early crashed the
    interpreter in a COMMIT racing the next writer). A caller that counts what a
    write committed runs the write and the count as one such step: a cancel that
    came during the COMMIT would otherwise leave the rows stored and not counted."""
    task = asyncio.ensure_future(step)
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait([task])  # waiting is cancelled; the task is not
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return task.result()
