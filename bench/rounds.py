"""Interleaved rounds for the load bench: two sides, measured back to back.

A figure taken at another moment is no ceiling on a shared machine (its load drifts
within minutes), so each ratio here comes from two wrk runs next to each other, and
the order flips every round so that a steady drift favours neither side.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import PASSWORD, WrkResult, finish_wrk, nonce, run_wrk, start_wrk

BATCH = 30
LOGIN_CLIENTS = 20


@dataclass(frozen=True)
class Side:
    """One side of a round: what wrk drives. `args` is called per run, so a sync
    run gets a fresh nonce (new URLs and action ids) every time."""

    url: str
    script: str
    args: Callable[[], list[str]]
    login_storm: tuple[str, str] | None = None  # (login URL, user) run alongside

    def run(self, workdir: Path, seconds: float) -> WrkResult:
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


def rounds(a: Side, b: Side, s: Settings) -> list[tuple[WrkResult, WrkResult]]:
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


def wrk_dict(r: WrkResult) -> dict[str, float]:
    return {
        "per_second": round(r.per_second, 1),
        "p50_ms": round(r.p50_ms, 2),
        "p99_ms": round(r.p99_ms, 2),
    }


def check(value: float, op: str, limit: float) -> dict[str, Any]:
    met = value >= limit if op == ">=" else value <= limit
    return {"value": value, "limit": f"{op} {limit:g}", "met": met}


def against_bare(
    title: str,
    bare: Side,
    pod: Side,
    s: Settings,
    unit: str,
    ratio_min: float,
    p99_max: float | None,
) -> dict[str, Any]:
    """A row whose figure is podsync's requests/s over the bare handler's, per round."""
    got = rounds(bare, pod, s)
    ratios = [p.per_second / b.per_second for b, p in got]
    row: dict[str, Any] = {
        "scenario": title,
        "unit": unit,
        "ratio": median(ratios),
        "ratio_rounds": [round(r, 3) for r in ratios],
        "sides": ["bare", "podsync"],
        "p99_ms": median([p.p99_ms for _, p in got], 1),
        "podsync": [wrk_dict(p) for _, p in got],
        "bare": [wrk_dict(b) for b, _ in got],
        "checks": [check(median(ratios), ">=", ratio_min)],
    }
    if p99_max is not None:
        row["checks"].append(check(row["p99_ms"], "<=", p99_max))
    return row


def podsync_pair(
    title: str,
    sides: tuple[str, str],
    a: Side,
    b: Side,
    s: Settings,
    figure: Callable[[WrkResult, WrkResult], float],
    what: str,
    limit: float,
) -> dict[str, Any]:
    """A row comparing podsync with itself (a, b), `figure` per round, to stay <= limit."""
    got = rounds(a, b, s)
    values = [figure(ra, rb) for ra, rb in got]
    return {
        "scenario": title,
        "unit": what,
        "ratio": median(values),
        "ratio_rounds": [round(v, 3) for v in values],
        "sides": list(sides),
        sides[0]: [wrk_dict(ra) for ra, _ in got],
        sides[1]: [wrk_dict(rb) for _, rb in got],
        "checks": [check(median(values), "<=", limit)],
    }


def get_side(url: str, token: str = "") -> Side:
    return Side(url, "get.lua", lambda: [token])


def sync_side(url: str, token: str = "") -> Side:
    return Side(url, "sync.lua", lambda: [token, nonce(), str(BATCH)])
