"""Where one process's CPU goes under the gpodder subscription push (30 new feeds a POST).

    python bench/push_cpu.py                          # 3 rounds of 5 s: CPU per push
    python bench/push_cpu.py --strace 4               # + system calls per push (strace -c)
    python bench/push_cpu.py --cprofile push.prof      # + the server run under cProfile
    python bench/push_cpu.py --perf push.data          # + perf record -g of the server
    python bench/push_cpu.py --source DIR             # the podsync/ of another tree

One `podsync serve` (the load bench's settings: durability full, access log off, no
fetcher), one user, one gpodder session; wrk (8 connections) POSTs 30 URLs never seen
before in "add" a request, as bench/gpodder_sides.py and the shared peer bench do.
For each round: the server's user and system CPU per push (/proc/PID/stat), split by
thread (the event loop, the commit thread, the checkpointer), the read and write
system calls per push (/proc/PID/io) and context switches. CPU per request is the
figure to compare on a busy machine, not throughput; `--source` runs another tree's
code with the same bench, for interleaved before/after runs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpodder_sides import DEVICE, gpodder_login
from harness import (
    Server,
    finish_wrk,
    free_port,
    nonce,
    podsync_argv,
    quiet_env,
    seed,
    start_wrk,
    write_podsync_config,
)

TICK = os.sysconf("SC_CLK_TCK")
BATCH = 30
SCRIPT = "gpodder_subscriptions.lua"
PERF = ["perf", "record", "-g", "-F", "999"]
USER = "push"

# Runs the server under cProfile and writes the stats when it stops (SIGTERM).
CPROFILE = """
import cProfile, sys
from podsync.cli import cli
profiler = cProfile.Profile()
profiler.enable()
try:
    cli(sys.argv[2:], prog_name="podsync")
except SystemExit:
    pass
finally:
    profiler.disable()
    profiler.dump_stats(sys.argv[1])
"""


def thread_cpu(pid: int) -> dict[str, tuple[int, int]]:
    """utime and stime ticks of each thread, by thread name (same names summed)."""
    found: dict[str, tuple[int, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            raw = (task / "stat").read_text()
        except FileNotFoundError:
            continue
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        name = "event loop" if task.name == str(pid) else name.rstrip("_0123456789")
        fields = raw.rpartition(")")[2].split()
        user, system = found.get(name, (0, 0))
        found[name] = (user + int(fields[11]), system + int(fields[12]))
    return found


def process_counters(pid: int) -> dict[str, int]:
    counters: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        key, _, value = line.partition(":")
        counters[key] = int(value)
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            counters[key] = int(value)
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    counters["utime"], counters["stime"] = int(fields[11]), int(fields[12])
    return counters


def load_average() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def push_run(server: Server, session: str, workdir: Path, seconds: float) -> dict[str, object]:
    url = f"{server.base}/api/2/subscriptions/{USER}/{DEVICE}.json"
    load = load_average()
    threads0, counters0 = thread_cpu(server.pid), process_counters(server.pid)
    wrk = start_wrk(url, SCRIPT, [session, nonce(), str(BATCH)], workdir, seconds)
    result = finish_wrk(wrk)
    threads1, counters1 = thread_cpu(server.pid), process_counters(server.pid)
    n = max(result.requests, 1)
    ms = 1000 / TICK / n
    per_thread = {
        name: (
            round((u - threads0.get(name, (0, 0))[0]) * ms, 3),
            round((s - threads0.get(name, (0, 0))[1]) * ms, 3),
        )
        for name, (u, s) in threads1.items()
    }
    delta = {k: counters1[k] - counters0[k] for k in counters1}
    return {
        "load": load,
        "requests": result.requests,
        "per_s": round(result.per_second, 1),
        "user_ms": round(delta["utime"] * ms, 3),
        "system_ms": round(delta["stime"] * ms, 3),
        "cpu_ms": round((delta["utime"] + delta["stime"]) * ms, 3),
        "threads_user_system_ms": per_thread,
        "read_calls": round(delta["syscr"] / n, 1),
        "write_calls": round(delta["syscw"] / n, 1),
        "bytes_written_kib": round(delta["write_bytes"] / n / 1024, 1),
        "voluntary_switches": round(delta["voluntary_ctxt_switches"] / n, 1),
    }


def strace_run(server: Server, session: str, workdir: Path, seconds: float) -> str:
    """`strace -c -f` of the server while wrk pushes; the table, per push."""
    out = workdir / "strace.txt"
    tracer = subprocess.Popen(["strace", "-c", "-f", "-o", str(out), "-p", str(server.pid)])
    time.sleep(0.5)
    url = f"{server.base}/api/2/subscriptions/{USER}/{DEVICE}.json"
    wrk = start_wrk(url, SCRIPT, [session, nonce(), str(BATCH)], workdir, seconds)
    result = finish_wrk(wrk)
    tracer.send_signal(signal.SIGINT)
    tracer.wait()
    lines = [f"pushes while traced: {result.requests} (strace slows the server; counts, not times)"]
    for line in out.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0][0].isdigit():
            calls, name = int(parts[3]), parts[-1]
            lines.append(f"{name:20} {calls / max(result.requests, 1):8.1f} a push")
        elif parts and parts[-1] == "total":
            lines.append(f"{'total':20} {int(parts[2]) / max(result.requests, 1):8.1f} a push")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--strace", type=float, default=0, help="seconds of strace -c")
    ap.add_argument("--cprofile", type=Path, help="write the server's cProfile stats here")
    ap.add_argument("--perf", type=Path, help="perf record -g the rounds into this file")
    ap.add_argument("--source", type=Path, help="a tree whose podsync/ the server runs")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    # Output paths as given, before --source changes the working directory.
    args.cprofile = args.cprofile.resolve() if args.cprofile else None
    args.perf = args.perf.resolve() if args.perf else None
    with quiet_env(), tempfile.TemporaryDirectory(prefix="push-cpu-") as tmp:
        if args.source is not None:
            # `python -m podsync` looks in its working directory first, then PYTHONPATH.
            os.environ["PYTHONPATH"] = str(args.source.resolve())
            os.chdir(args.source)
        workdir = Path(tmp)
        port = free_port()
        config = write_podsync_config(workdir, port)
        seed(config, workdir, {USER: 0})
        argv = podsync_argv(config)
        if args.cprofile is not None:
            argv = [sys.executable, "-c", CPROFILE, str(args.cprofile.resolve()), *argv[3:]]
        with Server(argv, port, "/healthz", workdir / "podsync.log") as server:
            session = gpodder_login(server.base, USER)
            push_run(server, session, workdir, args.warmup)
            perf = None
            if args.perf is not None:
                perf = subprocess.Popen(
                    [*PERF, "-o", str(args.perf), "-p", str(server.pid)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(0.5)
            runs = [push_run(server, session, workdir, args.seconds) for _ in range(args.rounds)]
            if perf is not None:
                perf.send_signal(signal.SIGINT)
                perf.wait()
            traced = strace_run(server, session, workdir, args.strace) if args.strace else ""
    if args.json:
        print(json.dumps({"source": str(args.source or "."), "runs": runs}))
        return 0
    for run in runs:
        print(json.dumps(run))
    cpu = sorted(float(r["cpu_ms"]) for r in runs)  # type: ignore[arg-type]
    middle = cpu[len(cpu) // 2]
    print(f"CPU per push, median of {len(cpu)}: {middle:.3f} ms ({cpu[0]:.3f}-{cpu[-1]:.3f})")
    if traced:
        print(traced)
    return 0


if __name__ == "__main__":
    sys.exit(main())
