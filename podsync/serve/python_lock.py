"""The interpreter's lock in a serving process: handed over within a millisecond.

A thread that wants the interpreter while another thread runs Python waits for the
switch interval (`sys.setswitchinterval`, 5 ms by default) before it asks the other
to let go. The event loop lets go in every SQLite statement it runs, so while a worker
thread ran Python (a 20,000-feed list normalised off the loop, a big read's rows made
into objects), each statement of every other request could wait up to 5 ms to run
on: one person's list replace made another's small request, a handful of statements,
take 64-82 ms instead of a few (docs/performance.md, "Other requests beside a
thread's work"). At `SWITCH_INTERVAL_S` the same request took 22-40 ms.

The shorter interval costs nothing that shows while the loop runs alone (the commit
and checkpoint threads wait in SQLite and the system calls, without the lock), and
under two workers' writes it changed no figure measured.
"""

from __future__ import annotations

import sys

SWITCH_INTERVAL_S = 0.001


def settle() -> None:
    """Call when a process starts serving."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
