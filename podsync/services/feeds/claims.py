"""Who claimed a feed for a fetch, and whether that process is still there.

A claim moves a feed's next try a lease ahead (fetcher.LEASE_US), so that no other
process fetches it meanwhile; a process that dies mid-fetch would leave its feeds
waiting for the lease to run out. So each claim names its claimer (this machine's
name, the process id and the process's start time, `claimer`), and a fetcher that
starts takes back at once the claims of processes on this machine that are gone
(`is_gone`). A claim of another machine (several servers on one PostgreSQL database)
is left to its lease: from here nothing tells whether its process still runs.
"""

from __future__ import annotations

import os
import socket


def _start_time(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat's 22nd
    field), None where there is no /proc or no such process: a pid used again by a
    later process (a restarted container's 1) then starts at another time."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    return fields[19] if len(fields) > 19 else None


def claimer() -> str:
    """This process as a claimer: "HOST PID START" (asked per fetcher, never kept
    for the process: a worker forked from the parent is another process)."""
    return f"{socket.gethostname()} {os.getpid()} {_start_time(os.getpid()) or '-'}"


def is_gone(claimed_by: str) -> bool:
    """Whether the process that made a claim is gone: a process of this machine
    that no longer runs, or whose pid another process has since. False for another
    machine's claims and for this process's own."""
    parts = claimed_by.split(" ")
    if len(parts) != 3:
        return False
    host, pid_text, started = parts
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process: it runs
        pass
    now_started = _start_time(pid)
    return started != "-" and now_started is not None and now_started != started
