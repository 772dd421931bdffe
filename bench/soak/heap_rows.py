#!/usr/bin/env python3
"""A worker's heap reports side by side: one row per report (soak.py --heap-every M
writes them under RUN/heap), then what each part gained an hour over the last
`--hour` minutes of reports, so a growth of RSS can be put down to Python's objects,
its arenas, SQLite, or malloc's free space.

    python bench/soak/heap_rows.py RUN [--hour 60]

Columns, MiB: RSS and its anonymous part; Python's arenas and the objects in them;
SQLite's memory in use and its peak; malloc's heap, what is in use there and what is
free; the main heap's resident part (what a trim could not give back, or what was
touched again since the last trim).
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime
from pathlib import Path

FIGURES = {
    "rss": (r"^VmRSS:\s+(\d+) kB", 1 / 1024),
    "anon": (r"^RssAnon:\s+(\d+) kB", 1 / 1024),
    "arenas": (r"^python's allocator: (\d+) arenas of 1024 KiB", 1.0),
    "objects": (r"^python's allocator: .*?, ([\d.]+) MiB in objects", 1.0),
    "sqlite": (r"^sqlite: ([\d.]+) MiB in use", 1.0),
    "sq_peak": (r"^sqlite: .*?, ([\d.]+) MiB at the peak", 1.0),
    "m_heap": (r"^malloc: ([\d.]+) MiB in its heap", 1.0),
    "m_used": (r"^malloc: .*?, ([\d.]+) in use", 1.0),
    "m_free": (r"^malloc: .*?, ([\d.]+) free", 1.0),
    "resident": (r"^main heap: ([\d.]+) MiB resident", 1.0),
}
HEAD = re.compile(r"^pid (\d+) report (\d+) at (\S+)")


def read(path: Path) -> tuple[int, int, datetime, dict[str, float]] | None:
    text = path.read_text()
    head = HEAD.search(text)
    if head is None:
        return None
    values: dict[str, float] = {}
    for name, (pattern, scale) in FIGURES.items():
        found = re.search(pattern, text, re.M)
        if found:
            values[name] = float(found.group(1)) * scale
    when = datetime.fromisoformat(head.group(3).replace("Z", "+00:00"))
    return int(head.group(1)), int(head.group(2)), when, values


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--hour", type=float, default=60.0, help="minutes of the last window")
    args = ap.parse_args()
    reports: dict[int, list[tuple[int, datetime, dict[str, float]]]] = {}
    for path in (args.run / "heap").glob("heap-*-*.txt"):
        if path.name.count(".") > 1:  # heap-PID-N.pymalloc.txt and the like
            continue
        found = read(path)
        if found:
            pid, number, when, values = found
            reports.setdefault(pid, []).append((number, when, values))
    names = list(FIGURES)
    for pid, rows in sorted(reports.items()):
        rows.sort()
        start = rows[0][1]
        print(f"== worker {pid}")
        print("report  min " + " ".join(f"{n:>8}" for n in names))
        for number, when, values in rows:
            minutes = (when - start).total_seconds() / 60
            cells = " ".join(f"{values.get(n, float('nan')):8.2f}" for n in names)
            print(f"r{number:<4} {minutes:5.0f} {cells}")
        last_when = rows[-1][1]
        window = [r for r in rows if (last_when - r[1]).total_seconds() <= args.hour * 60]
        if len(window) < 2:
            continue
        hours = (window[-1][1] - window[0][1]).total_seconds() / 3600
        if hours <= 0:
            continue
        first, last = window[0][2], window[-1][2]
        gains = " ".join(f"{(last.get(n, 0.0) - first.get(n, 0.0)) / hours:+8.2f}" for n in names)
        print(f"per hour, r{window[0][0]}-r{window[-1][0]}: {gains}")


if __name__ == "__main__":
    main()
