#!/usr/bin/env python3
"""Summarise a soak run's metrics.jsonl: RSS/PSS per process every few minutes, then
the slope (least squares, MiB an hour) of each process's RSS, PSS and anonymous
memory over the first and the last segment of the load, and over the whole of it;
for RSS also the median slope (Theil-Sen), which a few transient samples hardly move.

    python bench/soak/analyze.py RUN [--segment MINUTES] [--window A-B ...]

The segment is an hour by default, or a third of the run when the run is shorter
than three hours (so a 20-minute run compares its first and last 7 minutes). A
process present in only part of a segment (a worker killed or replaced) has its
own line with the samples it has.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

Record = dict[str, Any]


def slope(points: list[tuple[float, float]]) -> float | None:
    n = len(points)
    if n < 3:
        return None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    return sxy / sxx if sxx else None


def median_slope(points: list[tuple[float, float]]) -> float | None:
    """Theil-Sen: the median of the slopes between every two samples. A sample taken
    while a password was being checked (argon2id's 64 MiB, gone a moment later) moves
    the least-squares slope of a short window; it hardly moves this one."""
    pairs = sorted(
        (y2 - y1) / (x2 - x1)
        for i, (x1, y1) in enumerate(points)
        for x2, y2 in points[i + 1 :]
        if x2 != x1
    )
    if len(pairs) < 3:
        return None
    middle = len(pairs) // 2
    return pairs[middle] if len(pairs) % 2 else (pairs[middle - 1] + pairs[middle]) / 2


def table(records: list[Record], every: float) -> None:
    print(
        "t_min  load1 | per process pid:rss/pss MiB | WAL KiB | DB MiB | requests"
        " | non2xx 5xx exc | cpu ms/req | core probe ms"
    )
    shown = -every
    for r in records:
        if r["tag"] == "" and r["t_min"] - shown < every:
            continue
        shown = r["t_min"]
        cells = " ".join(
            f"{p['pid']}:{p.get('rss', 0) / 1024:.1f}/{p.get('pss', 0) / 1024:.1f}"
            for p in r["procs"]
        )
        print(
            f"{r['t_min']:6.1f} {r['load'][0]:>5} | {cells} | {r['wal_bytes'] // 1024} | "
            f"{r['db_bytes'] / 2**20:.1f} | {r['client_requests']} | {r['client_non2xx']} "
            f"{r['client_5xx']} {r['client_exc']} | {r['cpu_ms_per_req']} | "
            f"{r.get('probe_cpu_ms', '-')} [{r['tag']}]"
        )


def slopes(load: list[Record], parent: int, start: float, end: float, name: str) -> None:
    window = [r for r in load if start <= r["t_min"] <= end]
    print(f"\n{name}: t={start:.1f}..{end:.1f} min, {len(window)} samples (MiB an hour)")
    if not window:
        return
    by_pid: dict[int, list[tuple[float, Record]]] = {}
    for r in window:
        for p in r["procs"]:
            by_pid.setdefault(p["pid"], []).append((r["t_min"] / 60, p))
    for pid, points in by_pid.items():
        role = "parent" if pid == parent else "worker"
        cells = []
        for key in ("rss", "pss", "anonymous"):
            series = [(x, p.get(key, 0) / 1024) for x, p in points]
            s = slope(series)
            values = [y for _, y in series]
            shown = "n/a" if s is None else f"{s:+.2f}"
            if key == "rss":
                m = median_slope(series)
                shown += "" if m is None else f" (median slope {m:+.2f})"
            cells.append(f"{key} {shown} ({values[0]:.1f} -> {values[-1]:.1f})")
        fds = sorted({p.get("fds") for _, p in points if p.get("fds") is not None})
        print(f"  {role} {pid} (n={len(points)}): {'; '.join(cells)}; fds {fds}")
    db = slope([(r["t_min"] / 60, r["db_bytes"] / 2**20) for r in window])
    cpu = [r["cpu_ms_per_req"] for r in window if r["cpu_ms_per_req"]]
    rate = [r["server_requests_interval"] for r in window]
    loads = [float(r["load"][0]) for r in window]
    print(
        f"  database {'n/a' if db is None else f'{db:+.1f}'} MiB/h; cpu ms/req "
        f"{cpu[0] if cpu else '-'} -> {cpu[-1] if cpu else '-'}; requests per sample "
        f"{sum(rate) / len(rate):.0f}; load1 {min(loads):.1f}-{max(loads):.1f}"
    )
    probe = [r["probe_cpu_ms"] for r in window if r.get("probe_cpu_ms")]
    if len(cpu) >= 2 and len(probe) >= 2:
        # Medians of the window's first and last fifth: one sample moves either a lot.
        n, m = max(1, len(cpu) // 5), max(1, len(probe) // 5)
        cpu_from, cpu_to = statistics.median(cpu[:n]), statistics.median(cpu[-n:])
        probe_from, probe_to = statistics.median(probe[:m]), statistics.median(probe[-m:])
        steal = [r["steal"] for r in window if r.get("steal") is not None]
        print(
            f"  cpu ms/req {cpu_from:.2f} -> {cpu_to:.2f} (x{cpu_to / cpu_from:.2f}); the core"
            f" probe {probe_from:.1f} -> {probe_to:.1f} ms (x{probe_to / probe_from:.2f}):"
            f" the server's own share x{(cpu_to / cpu_from) / (probe_to / probe_from):.2f}"
            + (f"; steal up to {max(steal):.1%}" if steal else "")
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run", type=Path)
    ap.add_argument("--segment", type=float, default=None, help="minutes")
    ap.add_argument("--every", type=float, default=5.0, help="minutes between table rows")
    ap.add_argument(
        "--window",
        action="append",
        default=[],
        metavar="A-B",
        help="also the slopes over minutes A to B of the load (to compare runs of"
        " different lengths over the same minutes); may be given again",
    )
    args = ap.parse_args()
    with open(args.run / "metrics.jsonl", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    parent = records[0]["procs"][0]["pid"]
    load = [r for r in records if r["tag"] == ""]
    table(records, args.every)
    if not load:
        print("no samples under load")
        return
    first, end = load[0]["t_min"], load[-1]["t_min"]
    length = end - first
    segment = args.segment or (60.0 if length >= 180 else length / 3)
    slopes(load, parent, first, first + segment, "first segment")
    slopes(load, parent, end - segment, end, "last segment")
    slopes(load, parent, first, end, "whole run")
    for window in args.window:
        start, _, stop = window.partition("-")
        slopes(load, parent, first + float(start), first + float(stop), f"minutes {window}")


if __name__ == "__main__":
    main()
