"""The targets of this round against the results bench/targets.sh wrote: one line each.

    python bench/targets.py DIR        # DIR: where targets.sh put its JSON files

A result that is missing (a bench not run, or failed) is said so; nothing here runs a
server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

GPODDER = ("sub_push", "sub_pull", "sub_poll", "ep_push", "ep_pull", "ep_poll")


def read(directory: Path, name: str) -> Any:
    try:
        return json.loads((directory / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None


def line(what: str, value: str, target: str, met: bool | None) -> str:
    verdict = "-" if met is None else ("met" if met else "MISSED")
    return f"| {what} | {value} | {target} | {verdict} |"


def load_row(load: Any, prefix: str) -> Any:
    return next((r for r in load["rows"] if r["scenario"].startswith(prefix)), None)


def main() -> None:
    directory = Path(sys.argv[1])
    rows = ["| target | measured | wanted | |", "|---|---|---|---|"]
    one = read(directory, "peer_gpodder")
    if one and "sub_push" in one:
        cpu = one["sub_push"]["cpu_ratio"]
        podsync = one["sub_push"]["podsync"]["cpu_ms_per_req"]
        opodsync = one["sub_push"]["opodsync"]["cpu_ms_per_req"]
        rows.append(
            line(
                "1 process: subscription push CPU, podsync / oPodSync",
                f"{cpu} ({podsync} / {opodsync} ms)",
                "<= 0.9 (goal 0.67)",
                cpu <= 0.9,
            )
        )
    two = read(directory, "peer_gpodder_2")
    if two:
        for kind in GPODDER:
            if kind in two:
                ratio = two[kind]["ratio"]
                rows.append(
                    line(
                        f"2 workers: gpodder {kind}, throughput over oPodSync",
                        f"{ratio}x",
                        ">= 1.5",
                        ratio >= 1.5,
                    )
                )
    opa = read(directory, "peer_opodsync_2")
    if opa:
        writes = opa["write"]["ratio_podsync_over_opodsync"]["actions_per_s"]["median"]
        rows.append(
            line(
                "2 workers: Open Podcast API writes, actions/s over oPodSync",
                f"{writes}x",
                ">= 1.2 (goal 1.5)",
                writes >= 1.2,
            )
        )
    storm = read(directory, "compare")
    if storm:
        ratio = storm["ratios"]["list_p99_storm/quiet"]
        rows.append(
            line("1 process: compare.py storm, list p99 / quiet", f"{ratio}", "<= 3", ratio <= 3)
        )
    load = read(directory, "load")
    if load:
        rows += load_lines(load)
    rss = read(directory, "rss")
    row = load_row(rss, "idle RSS") if rss else None
    if row:
        rows.append(
            line(
                "1 process: idle RSS above bare aiohttp (defaults, fetcher on)",
                f"+{row['ratio']} MiB ({row['podsync_mib']} / {row['bare_mib']})",
                "<= +6",
                row["ratio"] <= 6,
            )
        )
    workers = read(directory, "workers")
    if workers:
        memory = workers["memory"]
        for key, mem in memory.items():
            rows.append(
                line(
                    f"idle memory, workers = {key}",
                    f"RSS {mem['rss_mib']} MiB, PSS {mem['pss_mib']} MiB",
                    "(said in docs)",
                    None,
                )
            )
        for name, row in workers["scenarios"].items():
            rows.append(
                line(
                    f"workers = {workers['workers']} over 1 process: {name}",
                    f"{row['ratio']}x (CPU/req {row['one']['cpu_ms']} -> "
                    f"{row['many']['cpu_ms']} ms)",
                    "(said in docs)",
                    None,
                )
            )
    startup = directory / "startup.txt"
    if startup.exists():
        rows.append(
            line(
                "binary size, start-up, idle RSS",
                startup.read_text().strip().replace("\n", "; "),
                "not worse",
                None,
            )
        )
    print("\n".join(rows))


def load_lines(load: Any) -> list[str]:
    out = []
    floors = {
        "list": load_row(load, "floor: the store calls of a list page"),
        "poll": load_row(load, "floor: the store calls of a poll"),
    }
    for name, prefix, wanted in (
        ("list", "list page of 50", 0.75),
        ("poll", "change-feed poll", 0.55),
    ):
        row, floor = load_row(load, prefix), floors[name]
        if row and floor:
            ratio = round(row["ratio"] / floor["ratio"], 2)
            out.append(
                line(
                    f"1 process: {name} of its floor",
                    f"{ratio} ({row['ratio']} / {floor['ratio']} of a bare GET)",
                    f">= {wanted}",
                    ratio >= wanted,
                )
            )
    sync = load_row(load, "sync batch")
    if sync:
        out.append(
            line(
                "1 process: sync batch p99 / bare insert p99",
                f"{sync['p99_ratio']}x",
                "(last round 2.4x)",
                None,
            )
        )
    out.append(
        line(
            "load average during load.py",
            f"{load['load_average_before']} -> {load['load_average_after']}",
            "",
            None,
        )
    )
    return out


if __name__ == "__main__":
    main()
