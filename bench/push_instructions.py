"""CPU instructions of one gpodder subscription push (30 new feeds), counted, not timed.

    python bench/push_instructions.py                       # this tree
    python bench/push_instructions.py --source DIR          # the podsync/ of another tree
    python bench/push_instructions.py --settle              # with the server's collector set-up
    python bench/push_instructions.py --episodes            # a gpodder episode upload instead

On a machine busy with other work the CPU time of a request moves by 10% and more from
run to run; the number of instructions it takes does not. This drives the service
layer in-process, without HTTP (8 concurrent `DeviceSubscriptions.upload` calls, as
wrk's 8 connections, so writes share COMMITs as they do in the server), on a real
SQLite database at durability "full", under valgrind's callgrind, twice: with a few
pushes and with more; the difference over the extra pushes is the instructions a push
takes, every thread of the process counted (the commit and checkpoint threads' SQLite
work included, the kernel's not). Needs valgrind.

`--episodes` counts a gpodder episode upload of 1,000 plays instead, its JSON parsed,
one at a time: the shared heavy-user bench's fill (bench/fill_cpu.py's bodies, 1,000
podcasts an upload), each run making the same bodies (`--few` and `--many` are then
uploads: 2 and 8 unless given).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CONCURRENCY = 8
WARM_UP = 10  # pushes per writer before the counted ones


async def _pushes(count: int, settle: bool) -> None:
    from podsync.config import SyncConfig
    from podsync.services.gpodder.subscriptions import GpodderSubscriptions
    from podsync.services.sync import SyncService
    from podsync.storage.sqlite import Database
    from podsync.store import users

    with tempfile.TemporaryDirectory(prefix="push-instructions-") as tmp:
        db = Database(os.path.join(tmp, "podsync.db"), "full")
        await db.open()
        async with db.write() as conn:
            user = await users.create(conn, "push", "-", 1)
        limits = SyncConfig(max_subscriptions_per_user=10**8, max_entities_per_user=10**8)
        uploads = GpodderSubscriptions(db, SyncService(db, limits))
        made = 0

        async def writer(number: int, pushes: int) -> None:
            nonlocal made
            for _ in range(pushes):
                made += 1
                add = [f"https://bench.example/{number}/{made}/{i}/feed.xml" for i in range(30)]
                await uploads.upload(user.id, "bench-device", {"add": add, "remove": []})

        await asyncio.gather(*(writer(n, WARM_UP) for n in range(CONCURRENCY)))
        if settle:
            from podsync.serve import python_heap

            python_heap.settle()
        await asyncio.gather(*(writer(n, count // CONCURRENCY) for n in range(CONCURRENCY)))
        await db.close()


async def _episode_uploads(count: int, made: int) -> None:
    from fill_cpu import bodies  # the heavy-user fill's uploads, as bench/fill_cpu.py sends them

    from podsync.config import GpodderConfig
    from podsync.services.episodes.bounds import UploadBounds
    from podsync.services.episodes.writes import EpisodeWrites
    from podsync.storage.sqlite import Database
    from podsync.store import users

    # `made` bodies in both counted runs, whatever `count`: making them cancels out.
    uploads = bodies(made)
    with tempfile.TemporaryDirectory(prefix="push-instructions-") as tmp:
        db = Database(os.path.join(tmp, "podsync.db"), "full")
        await db.open()
        async with db.write() as conn:
            user = await users.create(conn, "push", "-", 1)
        writes = EpisodeWrites(db, UploadBounds(GpodderConfig(max_episode_actions_per_user=10**8)))
        for body in uploads[:count]:
            await writes.upload(user.id, json.loads(body))  # the JSON parsed, as a server does
        await db.close()


def _instructions(source: Path, pushes: int, settle: bool, episodes: int = 0) -> int:
    """Instructions of a process making `pushes` pushes (or, with `episodes`, uploads
    out of `episodes` made)."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    argv += [sys.executable, __file__, "--run", str(pushes)] + (["--settle"] if settle else [])
    argv += ["--episodes", "--made", str(episodes)] if episodes else []
    done = subprocess.run(argv, env=env, cwd=source, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no count from callgrind: {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--few", type=int)
    ap.add_argument("--many", type=int)
    ap.add_argument("--settle", action="store_true", help="python_heap.settle() first")
    ap.add_argument("--episodes", action="store_true", help="episode uploads of 1,000 plays")
    ap.add_argument("--run", type=int, help=argparse.SUPPRESS)  # the counted process
    ap.add_argument("--made", type=int, default=0, help=argparse.SUPPRESS)  # its uploads made
    args = ap.parse_args()
    if args.settle and args.episodes:
        ap.error("--settle counts subscription pushes only, not --episodes")
    if args.run is not None:
        if args.episodes:
            asyncio.run(_episode_uploads(args.run, max(args.made, args.run)))
        else:
            asyncio.run(_pushes(args.run, args.settle))
        return 0
    source = args.source.resolve()
    low = args.few or (2 if args.episodes else 16)
    high = args.many or (8 if args.episodes else 96)
    made = high if args.episodes else 0
    few = _instructions(source, low, args.settle, made)
    many = _instructions(source, high, args.settle, made)
    what = "an upload of 1,000 plays" if args.episodes else "a push"
    per = (many - few) / (high - low)
    print(f"{source}: {per / 1e6:.2f} million instructions {what} ({few:,} / {many:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
