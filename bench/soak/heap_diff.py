#!/usr/bin/env python3
"""What grew between two heap snapshots of one worker (soak.py --tracemalloc N
--heap-every M writes them under RUN/heap, one per worker per report).

    python bench/soak/heap_diff.py RUN/heap/heap-PID-2.tracemalloc RUN/heap/heap-PID-6.tracemalloc
    python bench/soak/heap_diff.py --pid PID RUN        # the second report against the last

Prints the allocation sites whose live size grew most (by traceback, the frames in
podsync first), and the totals.
"""

from __future__ import annotations

import argparse
import re
import tracemalloc
from pathlib import Path

IGNORED = (
    tracemalloc.Filter(False, tracemalloc.__file__),
    tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
    tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
    tracemalloc.Filter(False, "<unknown>"),
)


def snapshots_of(run: Path, pid: int) -> tuple[Path, Path]:
    found = sorted(
        (int(m.group(1)), p)
        for p in (run / "heap").glob(f"heap-{pid}-*.tracemalloc")
        if (m := re.search(r"-(\d+)\.tracemalloc$", p.name))
    )
    if len(found) < 2:
        raise SystemExit(f"fewer than two snapshots of pid {pid} under {run / 'heap'}")
    # The first report is taken as the load starts: the second is the baseline.
    first = found[1][1] if len(found) > 2 else found[0][1]
    return first, found[-1][1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", help="two snapshots, or a soak run with --pid")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--group", choices=("traceback", "lineno", "filename"), default="traceback")
    args = ap.parse_args()
    if args.pid is not None:
        old_path, new_path = snapshots_of(Path(args.paths[0]), args.pid)
    else:
        old_path, new_path = (Path(p) for p in args.paths[:2])
    old = tracemalloc.Snapshot.load(str(old_path)).filter_traces(IGNORED)
    new = tracemalloc.Snapshot.load(str(new_path)).filter_traces(IGNORED)
    total_old = sum(s.size for s in old.statistics("filename"))
    total_new = sum(s.size for s in new.statistics("filename"))
    print(f"{old_path.name} -> {new_path.name}")
    print(f"traced: {total_old / 2**20:.2f} MiB -> {total_new / 2**20:.2f} MiB")
    for stat in new.compare_to(old, args.group)[: args.top]:
        print(
            f"\n{stat.size_diff / 1024:+10.1f} KiB  {stat.count_diff:+8d} blocks"
            f"  (now {stat.size / 1024:.1f} KiB in {stat.count} blocks)"
        )
        frames = list(stat.traceback)
        # Oldest frame first: the innermost of podsync's frames, then where it allocated.
        ours = [f for f in frames if "/podsync/" in f.filename][-5:]
        for frame in [*ours, frames[-1]] if frames[-1] not in ours else ours:
            print(f"    {frame.filename}:{frame.lineno}")


if __name__ == "__main__":
    main()
