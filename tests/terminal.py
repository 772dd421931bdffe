"""Reading what a child process writes to a pseudo-terminal (prompts, progress bars)."""

from __future__ import annotations

import os
import select
import time


def read_until(fd: int, wanted: bytes, seen: bytearray, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while wanted not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"waited for {wanted!r}, saw {bytes(seen)!r}"
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            try:
                chunk = os.read(fd, 1024)
            except OSError:  # the child closed the terminal
                chunk = b""
            assert chunk, f"terminal closed before {wanted!r}; saw {bytes(seen)!r}"
            seen += chunk
