"""Reading what a child process writes to a pseudo-terminal (prompts, progress bars)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
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


def converse(command: list[str], exchanges: list[tuple[bytes, bytes | None]]) -> tuple[int, bytes]:
    """Run `command` with a terminal for stdin, stdout and stderr; for each
    (prompt, answer) wait for the prompt and type the answer (None: just wait).
    Returns the exit code and everything the terminal showed."""
    main, secondary = pty.openpty()
    process = subprocess.Popen(
        command, stdin=secondary, stdout=secondary, stderr=secondary, close_fds=True
    )
    os.close(secondary)
    seen = bytearray()
    try:
        for prompt, answer in exchanges:
            read_until(main, prompt, seen)
            if answer is not None:
                os.write(main, answer + b"\n")
        code = process.wait(timeout=30)
        while select.select([main], [], [], 0.1)[0]:  # what it wrote before exiting
            try:
                chunk = os.read(main, 1024)
            except OSError:  # Linux: EIO once the child's side is closed
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(main)
    return code, bytes(seen)
