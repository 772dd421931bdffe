"""Start-up figures of the frozen binary and of `python -m podsync`.

Prints, for each: the binary's size, the time from process start to the first 200
on /healthz (median of --runs), and the idle RSS of the serving process
(/proc/<pid>/status VmRSS, read after it answered and sat idle for a second).
Budgets: binary <= 30 MB, ready <= 1.5 s, idle RSS <= 60 MB.

    packaging/build.sh && python bench/startup.py [--runs 7] [--binary dist/podsync-linux-x86_64]

A one-file PyInstaller binary runs as two processes: the bootloader, which unpacks
the bundle into a temp dir and waits, and its child, the Python that serves. The RSS
figure is the child's; the bootloader's is printed beside it.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGET_SIZE_MB = 30.0
BUDGET_READY_S = 1.5
BUDGET_RSS_MB = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def healthz_ok(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def clean_env() -> dict[str, str]:
    """The caller's environment without any virtualenv or Python path settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PODSYNC_LOG_ACCESS_LOG"] = "false"
    return env


def one_start(command: list[str], workdir: Path, env: dict[str, str]) -> tuple[float, int, int]:
    """Start, wait for the first 200 on /healthz, idle 1 s; (seconds, server KiB, boot KiB)."""
    port = free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*command, "serve", "--port", str(port)],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not healthz_ok(port):
            if proc.poll() is not None:
                raise RuntimeError(f"{command[0]} exited with {proc.returncode}")
            if time.perf_counter() - started > 30:
                raise RuntimeError(f"{command[0]} did not answer within 30 s")
            time.sleep(0.005)
        ready = time.perf_counter() - started
        time.sleep(1.0)
        kids = children(proc.pid)
        server_kib = rss_kib(kids[0]) if kids else rss_kib(proc.pid)
        boot_kib = rss_kib(proc.pid) if kids else 0
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=15)
    if code != 0:
        raise RuntimeError(f"{command[0]} exited with {code} on SIGTERM")
    return ready, server_kib, boot_kib


def measure(name: str, command: list[str], runs: int) -> tuple[float, float]:
    readies: list[float] = []
    rss: list[int] = []
    boot: list[int] = []
    with tempfile.TemporaryDirectory(prefix="podsync-bench-") as tmp:
        workdir = Path(tmp)
        # The database and any config file under the temp dir: without these the
        # server would open (and migrate) the user's own ~/.local/share/podsync.
        # Not the working directory itself: its podsync/ folder would shadow the
        # package for `python -m podsync`.
        home = workdir / "xdg"
        env = {**clean_env(), "XDG_DATA_HOME": str(home), "XDG_CONFIG_HOME": str(home)}
        for _ in range(runs):
            ready, server_kib, boot_kib = one_start(command, workdir, env)
            readies.append(ready)
            rss.append(server_kib)
            boot.append(boot_kib)
    ready_s = statistics.median(readies)
    rss_mb = statistics.median(rss) / 1024
    extra = f" (+ bootloader {statistics.median(boot) / 1024:.1f} MB)" if any(boot) else ""
    print(
        f"{name:<18} ready {ready_s:.3f} s median of {runs} "
        f"(min {min(readies):.3f}, max {max(readies):.3f}); idle RSS {rss_mb:.1f} MB{extra}"
    )
    return ready_s, rss_mb


def verdict(label: str, value: float, budget: float, unit: str) -> str:
    mark = "ok" if value <= budget else "OVER BUDGET"
    return f"  {label:<10} {value:8.2f} {unit:<3} budget {budget:5.1f} {unit:<3} {mark}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--binary", type=Path, default=ROOT / "dist" / f"podsync-linux-{platform.machine()}"
    )
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    binary: Path = args.binary.resolve()
    if not binary.is_file():
        print(f"{binary} does not exist; run packaging/build.sh first", file=sys.stderr)
        return 2

    size_mb = binary.stat().st_size / 1024 / 1024
    print(f"binary {binary}: {size_mb:.1f} MB")
    bin_ready, bin_rss = measure("binary", [str(binary)], args.runs)
    py_ready, py_rss = measure("python -m podsync", [sys.executable, "-m", "podsync"], args.runs)
    print("budgets (binary):")
    print(verdict("size", size_mb, BUDGET_SIZE_MB, "MB"))
    print(verdict("ready", bin_ready, BUDGET_READY_S, "s"))
    print(verdict("idle RSS", bin_rss, BUDGET_RSS_MB, "MB"))
    print("budgets (python -m podsync):")
    print(verdict("ready", py_ready, BUDGET_READY_S, "s"))
    print(verdict("idle RSS", py_rss, BUDGET_RSS_MB, "MB"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
