#!/usr/bin/env python3
"""Server-side duration per endpoint class, per 10-minute bucket, from server.log (text format)."""

import re
import sys
from collections import defaultdict

run = sys.argv[1]  # the soak run's directory
pat = re.compile(
    r"^(\d\d\d\d-\d\d-\d\d \d\d:\d\d):\d\d,\d+ INFO podsync.access: \S+ "
    r'"(\w+) ([^"]*)" (\d{3}) (\d+) ([\d.]+)ms'
)


def cls(m, p):
    p = re.sub(r"/u\d\d", "/U", p)
    p = re.sub(r"/phone\d\d", "/D", p)
    p = re.sub(r"/ui/podcasts/.*", "/ui/podcasts/X", p)
    p = re.sub(r"/ui/episodes/[^/]+/progress", "/ui/episodes/X/progress", p)
    p = re.sub(r"/ui/episodes/.*", "/ui/episodes/X", p)
    return f"{m} {p}"


b = defaultdict(lambda: defaultdict(list))
start = None
for line in open(run + "/server.log", errors="replace"):
    m = pat.match(line)
    if not m:
        continue
    t = m.group(1)
    hh, mm = int(t[11:13]), int(t[14:16])
    minute = hh * 60 + mm
    if start is None:
        start = minute
    bucket = (minute - start) // 10 * 10
    b[cls(m.group(2), m.group(3))][bucket].append(float(m.group(6)))
buckets = sorted({k for v in b.values() for k in v})
print("endpoint".ljust(48) + "".join(f"{'t+' + str(k):>16}" for k in buckets))
print(" " * 48 + "".join(f"{'n/p50/p90 ms':>16}" for k in buckets))
for ep in sorted(b, key=lambda e: -sum(len(x) for x in b[e].values())):
    row = ep[:47].ljust(48)
    for k in buckets:
        v = sorted(b[ep].get(k, []))
        cell = f"{len(v)}/{v[len(v) // 2]:.0f}/{v[int(len(v) * 0.9)]:.0f}" if v else "-"
        row += f"{cell:>16}"
    print(row)
