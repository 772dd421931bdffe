"""Interleaved rounds for the load bench: two sides, measured back to back.

A figure taken at another moment is no ceiling on a shared machine (its load drifts
within minutes), so each ratio here comes from two wrk runs next to each other, and
the order flips every round so that a steady drift favours neither side.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import PASSWORD, WrkResult, finish_wrk, nonce, run_wrk, start_wrk

BATCH = 30
LOGIN_CLIENTS = 20


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU time (user + system) of process `pid`, all threads and its main thread."""
    tick = os.sysconf("SC_CLK_TCK")

    def read(path: str) -> float:
        fields = Path(path).read_text().rpartition(")")[2].split()  # after "(comm)"
        return (int(fields[11]) + int(fields[12])) / tick  # utime, stime

    return read(f"/proc/{pid}/stat"), read(f"/proc/{pid}/task/{pid}/stat")


def speed_probe_ms(repeats: int = 5) -> float:
    """CPU milliseconds of a fixed pure-Python loop (median of `repeats`): the
    machine's speed at this moment. On the shared VM it moves by up to 1.8x within a
    minute, idle, and a CPU-per-request figure moves with it (docs/performance.md),
    so a bench taken at a slow moment reads high. Lower is faster; compare runs at
    similar probes."""
    import time

    times = []
    for _ in range(repeats):
        started, total = time.process_time(), 0
        for i in range(300_000):
            total += i * i
        times.append(time.process_time() - started)
    return round(1000 * statistics.median(times), 1)


@dataclass(frozen=True)
class Run:
    """One wrk run and the CPU time the server spent meanwhile. CPU per request
    moves much less with the machine's load than requests per second do."""

    wrk: WrkResult
    cpu_s: float  # the server process, all threads
    loop_cpu_s: float  # its main thread: the event loop

    @property
    def per_second(self) -> float:
        return self.wrk.per_second

    @property
    def p99_ms(self) -> float:
        return self.wrk.p99_ms

    @property
    def cpu_ms(self) -> float:
        """CPU milliseconds per request, all threads."""
        return 1000 * self.cpu_s / max(self.wrk.requests, 1)


@dataclass(frozen=True)
class Side:
    """One side of a round: what wrk drives. `args` is called per run, so a sync
    run gets a fresh nonce (new URLs and action ids) every time."""

    url: str
    script: str
    args: Callable[[], list[str]]
    pid: int  # the server's, for its CPU time
    login_storm: tuple[str, str] | None = None  # (login URL, user) run alongside

    def run(self, workdir: Path, seconds: float) -> Run:
        cpu_before, loop_before = cpu_seconds(self.pid)
        result = self._wrk(workdir, seconds)
        cpu_after, loop_after = cpu_seconds(self.pid)
        return Run(result, cpu_after - cpu_before, loop_after - loop_before)

    def _wrk(self, workdir: Path, seconds: float) -> WrkResult:
        if self.login_storm is None:
            return run_wrk(self.url, self.script, self.args(), workdir, seconds)
        login_url, user = self.login_storm
        storm = start_wrk(
            login_url, "login.lua", [user, PASSWORD], workdir, seconds, connections=LOGIN_CLIENTS
        )
        try:
            return finish_wrk(start_wrk(self.url, self.script, self.args(), workdir, seconds))
        finally:
            finish_wrk(storm)


@dataclass(frozen=True)
class Settings:
    seconds: int
    rounds: int
    warmup: int
    workdir: Path


def rounds(a: Side, b: Side, s: Settings) -> list[tuple[Run, Run]]:
    """`s.rounds` rounds of (a, b) back to back, order flipped every round."""
    if s.warmup:
        a.run(s.workdir, s.warmup)
        b.run(s.workdir, s.warmup)
    out = []
    for i in range(s.rounds):
        if i % 2 == 0:
            ra = a.run(s.workdir, s.seconds)
            rb = b.run(s.workdir, s.seconds)
        else:
            rb = b.run(s.workdir, s.seconds)
            ra = a.run(s.workdir, s.seconds)
        out.append((ra, rb))
    return out


def median(values: list[float], digits: int = 3) -> float:
    return round(statistics.median(values), digits)


def wrk_dict(r: Run) -> dict[str, float]:
    return {
        "per_second": round(r.per_second, 1),
        "p50_ms": round(r.wrk.p50_ms, 2),
        "p99_ms": round(r.p99_ms, 2),
        "cpu_ms_per_request": round(r.cpu_ms, 4),
        "loop_cpu_ms_per_request": round(1000 * r.loop_cpu_s / max(r.wrk.requests, 1), 4),
    }


def check(value: float, op: str, limit: float, label: str = "{}") -> dict[str, Any]:
    """`label` words the limit in the table: "{}" is replaced by e.g. ">= 0.5"."""
    met = value >= limit if op == ">=" else value <= limit
    return {"value": value, "limit": label.format(f"{op} {limit:g}"), "met": met}


def against_bare(
    title: str,
    bare: Side,
    pod: Side,
    s: Settings,
    unit: str,
    ratio_min: float,
    p99_max: float | None,
    p99_ratio_max: float | None = None,
) -> dict[str, Any]:
    """A row whose figure is podsync's requests/s over the bare handler's, per round.
    `p99_ratio_max`: podsync's p99 over the bare handler's p99 of the same round (the
    machine's load moves both alike), median over the rounds."""
    got = rounds(bare, pod, s)
    ratios = [p.per_second / b.per_second for b, p in got]
    cpu = [b.cpu_ms / p.cpu_ms for b, p in got]
    row: dict[str, Any] = {
        "scenario": title,
        "unit": unit,
        "ratio": median(ratios),
        "ratio_rounds": [round(r, 3) for r in ratios],
        # the same ratio from CPU time per request (bare's / podsync's): a check on
        # the throughput ratio when the machine is busy with other work
        "cpu_ratio": median(cpu),
        "cpu_ratio_rounds": [round(r, 3) for r in cpu],
        "sides": ["bare", "podsync"],
        "p99_ms": median([p.p99_ms for _, p in got], 1),
        "bare_p99_ms": median([b.p99_ms for b, _ in got], 1),
        "p99_ratio": median([p.p99_ms / b.p99_ms for b, p in got], 2),
        "p99_ratio_rounds": [round(p.p99_ms / b.p99_ms, 2) for b, p in got],
        "podsync": [wrk_dict(p) for _, p in got],
        "bare": [wrk_dict(b) for b, _ in got],
        "checks": [check(median(ratios), ">=", ratio_min)],
    }
    if p99_max is not None:
        row["checks"].append(check(row["p99_ms"], "<=", p99_max, "p99 {} ms"))
    if p99_ratio_max is not None:
        row["checks"].append(check(row["p99_ratio"], "<=", p99_ratio_max, "p99 {}x bare p99"))
    return row


def podsync_pair(
    title: str,
    sides: tuple[str, str],
    a: Side,
    b: Side,
    s: Settings,
    figure: Callable[[Run, Run], float],
    what: str,
    limit: float,
    cpu_figure: Callable[[Run, Run], float] | None = None,
) -> dict[str, Any]:
    """A row comparing podsync with itself (a, b), `figure` per round, to stay <= limit."""
    got = rounds(a, b, s)
    values = [figure(ra, rb) for ra, rb in got]
    cpu = {}
    if cpu_figure is not None:
        cpu_values = [cpu_figure(ra, rb) for ra, rb in got]
        cpu = {
            "cpu_ratio": median(cpu_values),
            "cpu_ratio_rounds": [round(v, 3) for v in cpu_values],
        }
    return {
        "scenario": title,
        "unit": what,
        "ratio": median(values),
        "ratio_rounds": [round(v, 3) for v in values],
        **cpu,
        "sides": list(sides),
        sides[0]: [wrk_dict(ra) for ra, _ in got],
        sides[1]: [wrk_dict(rb) for _, rb in got],
        "checks": [check(median(values), "<=", limit)],
    }


def get_side(pid: int, url: str, token: str = "") -> Side:
    return Side(url, "get.lua", lambda: [token], pid)


def sync_side(pid: int, url: str, token: str = "") -> Side:
    return Side(url, "sync.lua", lambda: [token, nonce(), str(BATCH)], pid)
