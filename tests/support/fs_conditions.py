"""Real filesystem conditions for tests: a small tmpfs (a disk that fills up) and a
read-only bind mount. Both need mount(2), which root has here; where it does not
(an unprivileged container), the tests that need them skip, and the db-layer tests
in test_database_unavailable.py prove the same mapping on real SQLite errors."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    result = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"cannot mount here ({result.stderr.strip()})")


def _umount(path: Path) -> None:
    # Lazy: a connection closed a moment ago must not fail the test's teardown.
    subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


@contextlib.contextmanager
def small_disk(path: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path`."""
    path.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path))
    try:
        yield path
    finally:
        _umount(path)


@contextlib.contextmanager
def read_only_view(source: Path, path: Path) -> Iterator[Path]:
    """`source` bind-mounted read-only at `path`: writes fail with EROFS, even as root."""
    path.mkdir(parents=True, exist_ok=True)
    _mount("--bind", str(source), str(path))
    try:
        _mount("-o", "remount,bind,ro", str(path))
        yield path
    finally:
        _umount(path)


def fill(disk: Path) -> Path:
    """Fill `disk` to the last byte with one file; return it (unlink it to free)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out, contextlib.suppress(OSError):
        chunk = b"\0" * 65536
        while True:
            out.write(chunk)
    with filler.open("ab", buffering=0) as out, contextlib.suppress(OSError):
        while True:  # the last partial chunk
            out.write(b"\0" * 512)
    return filler
