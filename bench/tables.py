"""The load bench's output: the machine line, per-round figures, the README table."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version()}


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def summary(row: dict[str, Any]) -> str:
    """The figure as the issue's table words it."""
    if row["unit"] == "MiB":
        return f"{row['ratio']:g} MiB"
    if row["unit"] == "MiB above bare":
        return (
            f"{row['podsync_mib']:g} MiB, bare aiohttp {row['bare_mib']:g} MiB: +{row['ratio']:g}"
        )
    text = f"{row['ratio']:.3f}"
    if row["unit"].startswith("of a"):
        text += f" {row['unit']}, p99 {row['p99_ms']:g} ms"
        if "p99_ratio" in row:
            text += f" (bare {row['bare_p99_ms']:g} ms: {row['p99_ratio']:g}x)"
    if "actions_per_second" in row:
        text += f" ({row['actions_per_second']:,.0f} actions/s)"
    return text


def targets(row: dict[str, Any]) -> tuple[str, str]:
    if not row["checks"]:  # a row that informs (the floor), with no target of its own
        return "-", "-"
    limits = ", ".join(c["limit"] for c in row["checks"])
    met = "met" if all(c["met"] for c in row["checks"]) else "MISSED"
    return limits, met


def print_markdown(f: dict[str, Any]) -> None:
    m = f["machine"]
    print(
        f"Measured {f['started']}: {m['nproc']} cores ({m['cpu']}), Python {m['python']}; "
        f"load average {f['load_average_before']} before, {f['load_average_after']} after; "
        f"wrk {f['wrk']}, bare and podsync alternating in {f['seconds']} s rounds, "
        f"median of {f['rounds']}."
        + (f" Settings: {json.dumps(f['overrides'])}." if f["overrides"] else "")
    )
    print()
    print(
        f"| scenario | podsync (median of {f['rounds']} rounds) | per round | "
        "same ratio from CPU time per request | target | |"
    )
    print("|---|---|---|---|---|---|")
    for row in f["rows"]:
        limits, met = targets(row)
        per_round = ", ".join(f"{v:g}" for v in row.get("ratio_rounds", [])) or "-"
        cpu = f"{row['cpu_ratio']:.3f}" if "cpu_ratio" in row else "-"
        print(f"| {row['scenario']} | {summary(row)} | {per_round} | {cpu} | {limits} | {met} |")


def print_text(f: dict[str, Any]) -> None:
    for row in f["rows"]:
        print(f"{row['scenario']}  [{row['unit']}]")
        sides = row.get("sides", [])
        for i, value in enumerate(row.get("ratio_rounds", [])):
            a, b = (row[side][i] for side in sides)
            print(
                f"  round {i + 1}: {value:6.3f} | {sides[0]} {a['per_second']:>8.1f}/s "
                f"p99 {a['p99_ms']:>7.2f} ms cpu {a['cpu_ms_per_request']:.3f} ms/req | "
                f"{sides[1]} {b['per_second']:>8.1f}/s p99 {b['p99_ms']:>7.2f} ms "
                f"cpu {b['cpu_ms_per_request']:.3f} ms/req"
            )
    print()
    print_markdown(f)
