"""Draw the web UI's app icons (podsync/web/ui/static/icon-192.png, icon-512.png):
a white play triangle on podsync's blue, as plain PNGs written with zlib (no image
library). Run from the repository's root after changing the drawing:

    python packaging/make_icons.py
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

BLUE = (0x2A, 0x55, 0xC9)
WHITE = (0xFF, 0xFF, 0xFF)
STATIC = Path(__file__).resolve().parent.parent / "podsync" / "web" / "ui" / "static"


def _inside_triangle(x: float, y: float) -> bool:
    """The play triangle, in a unit square: (0.36, 0.27), (0.36, 0.73), (0.74, 0.5)."""
    if x < 0.36 or x > 0.74:
        return False
    half = 0.23 * (0.74 - x) / 0.38
    return abs(y - 0.5) <= half


def _pixels(size: int) -> bytes:
    rows = []
    for j in range(size):
        row = bytearray(b"\x00")  # filter: none
        for i in range(size):
            x, y = (i + 0.5) / size, (j + 0.5) / size
            row += bytes(WHITE if _inside_triangle(x, y) else BLUE)
        rows.append(bytes(row))
    return b"".join(rows)


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def png(size: int) -> bytes:
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(_pixels(size), 9))
        + _chunk(b"IEND", b"")
    )


def main() -> None:
    for size in (192, 512):
        (STATIC / f"icon-{size}.png").write_bytes(png(size))


if __name__ == "__main__":
    main()
