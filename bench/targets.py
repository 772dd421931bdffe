"""The targets of this round against the results bench/targets.sh wrote: one line each.

    python bench/targets.py DIR        # DIR: where targets.sh put its JSON files

A result that is missing (a bench not run, or failed) is said so; nothing here runs a
server.
"""

from __future__ import annotations

import json
import statistics
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


HEADER = ["| target | measured | wanted | |", "|---|---|---|---|"]
MISSING = "not measured (bench not run or failed)"


def writes_table(directory: Path) -> list[str]:
    """The round's five rows: the writes, and the list page that must not regress."""
    rows = list(HEADER)
    one = read(directory, "peer_gpodder")
    if one and "sub_push" in one:
        cpu = one["sub_push"]["cpu_ratio"]
        podsync = one["sub_push"]["podsync"]["cpu_ms_per_req"]
        opodsync = one["sub_push"]["opodsync"]["cpu_ms_per_req"]
        value, met = f"{cpu} ({podsync} / {opodsync} ms)", cpu <= 0.9
    else:
        value, met = MISSING, None
    rows.append(
        line("subscription push, 1 process, CPU per request over oPodSync's", value, "<= 0.9", met)
    )
    two = read(directory, "peer_gpodder_2")
    for kind, what in (("sub_push", "subscription push"), ("ep_push", "episode push")):
        ratio = two[kind]["ratio"] if two and kind in two else None
        rows.append(
            line(
                f"{what}, 2 workers, throughput over oPodSync's 2 PHP workers",
                MISSING if ratio is None else f"{ratio}x",
                ">= 1.5",
                None if ratio is None else ratio >= 1.5,
            )
        )
    opa = read(directory, "peer_opodsync_2")
    writes = opa["write"]["ratio_podsync_over_opodsync"]["actions_per_s"]["median"] if opa else None
    rows.append(
        line(
            "Open Podcast API writes, 2 workers, actions/s over oPodSync",
            MISSING if writes is None else f"{writes}x",
            ">= 1.2",
            None if writes is None else writes >= 1.2,
        )
    )
    load = read(directory, "load")
    floor = floor_ratios(load) if load else {}
    listed = floor.get("list")
    rows.append(
        line(
            "list page of its floor (no regression)",
            MISSING if listed is None else f"{listed[0]} ({listed[1]} / {listed[2]} of a bare GET)",
            ">= 0.75",
            None if listed is None else listed[0] >= 0.75,
        )
    )
    return rows


def non2xx_lines(directory: Path) -> list[str]:
    """Answers other than 2xx, podsync / oPodSync, per bench (load.py stops at the first)."""
    out = ["| bench | non-2xx podsync | non-2xx oPodSync |", "|---|---|---|"]
    for name in ("peer_gpodder", "peer_gpodder_2"):
        result = read(directory, name)
        if result and "summary" in result:
            podsync = sum(s["non2xx"][0] for s in result["summary"].values())
            opodsync = sum(s["non2xx"][1] for s in result["summary"].values())
            out.append(f"| {name} | {podsync} | {opodsync} |")
    opa = read(directory, "peer_opodsync_2")
    if opa:
        phases = [opa[k] for k in ("read", "write", "read_after_writes") if k in opa]
        podsync = sum(p["podsync"]["non2xx"] for p in phases)
        opodsync = sum(p["opodsync"]["non2xx"] for p in phases)
        out.append(f"| peer_opodsync_2 | {podsync} | {opodsync} |")
    storm = read(directory, "compare")
    if storm:
        podsync = sum(v["non2xx"] for v in storm.values() if isinstance(v, dict) and "non2xx" in v)
        out.append(f"| compare | {podsync} | - |")
    runs = heavy_runs(directory)
    if runs:
        codes = [
            c
            for heavy in runs
            for side in heavy.values()
            if isinstance(side, dict)
            for key in ("concurrent_codes", "nc_concurrent_codes")
            for c in side.get(key, [])
        ]
        failed = sum(c != 200 for c in codes)
        out.append(f"| heavy_user (concurrent pulls, {plural(len(runs))}) | {failed} | - |")
    if read(directory, "load"):
        out.append("| load | 0 (it stops at the first) | - |")
    return out


def plural(runs: int) -> str:
    return f"{runs} run" if runs == 1 else f"{runs} runs"


def heavy_runs(directory: Path) -> list[Any]:
    """heavy_user.json, then heavy_user-2.json, ... as targets.sh wrote them (runs
    without both servers' results left out)."""
    names = ["heavy_user"]
    while (directory / f"heavy_user-{len(names) + 1}.json").exists():
        names.append(f"heavy_user-{len(names) + 1}")
    runs = [read(directory, name) for name in names]
    return [r for r in runs if r and "podsync" in r and "opodsync" in r]


def heavy_lines(directory: Path) -> list[str]:
    runs = heavy_runs(directory)
    if not runs:
        return []
    # The fill's ratio moves from run to run on a shared machine (1.3-1.7x between
    # two runs of one build): the verdict is the median run's, each run listed.
    ratios = [round(r["opodsync"]["fill_s"] / r["podsync"]["fill_s"], 2) for r in runs]
    fills = "; ".join(
        f"{r['podsync']['fill_s']} against {r['opodsync']['fill_s']} ({ratio}x)"
        for r, ratio in zip(runs, ratios, strict=True)
    )
    median = statistics.median(ratios)
    p, o = runs[0]["podsync"], runs[0]["opodsync"]
    pulls = ", ".join(str(r["podsync"].get("nc_full_s")) for r in runs)
    theirs = ", ".join(str(r["opodsync"].get("ep_full_s")) for r in runs)
    return [
        line(
            "heavy user: database on disk, MB",
            f"{p['db_mb']} against {o['db_mb']}",
            "<= 1.0x",
            p["db_mb"] <= o["db_mb"],
        ),
        line(
            f"heavy user: the fill, s ({plural(len(runs))}; median of the ratios)",
            f"{fills}; median {median}x",
            ">= 1.5x faster",
            median >= 1.5,
        ),
        line(
            "heavy user: full Nextcloud pull, s",
            f"{pulls} against oPodSync's full pull {theirs}",
            "<= oPodSync's",
            None,
        ),
    ]


def load_averages(directory: Path) -> list[str]:
    try:
        text = (directory / "load.txt").read_text()
    except OSError:
        return []
    out = ["| bench | load average before | after |", "|---|---|---|"]
    for entry in text.splitlines():
        name, before, after, failed = [*entry.split("|"), "", "", ""][:4]
        out.append(f"| {name}{f' ({failed})' if failed else ''} | {before} | {after} |")
    return out


def main() -> None:
    directory = Path(sys.argv[1])
    print("Writes, the round's table:\n")
    print("\n".join(writes_table(directory)))
    print("\nNon-2xx answers:\n")
    print("\n".join(non2xx_lines(directory)))
    print("\nEvery target:\n")
    rows = list(HEADER)
    rows += heavy_lines(directory)
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
    postgres = read(directory, "postgres")
    if postgres:
        rows += postgres_lines(postgres)
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
    averages = load_averages(directory)
    if averages:
        print("\nLoad average around each bench:\n")
        print("\n".join(averages))


def postgres_lines(result: Any) -> list[str]:
    """bench/pg_sync.py's runs: PostgreSQL's throughput over SQLite's, and its CPU a batch."""
    runs = result["runs"]
    ratio, cpu = result["pg_over_sqlite_median"], result["pg_cpu_ms_median"]
    ratios = ", ".join(str(r["pg_over_sqlite"]) for r in runs)
    cpus = ", ".join(str(r["pg_cpu_ms"]) for r in runs)
    return [
        line(
            "PostgreSQL, 1 process: sync batch throughput over SQLite's",
            f"{ratios} (median {ratio})",
            ">= 0.6",
            ratio >= 0.6,
        ),
        line("PostgreSQL: its CPU a batch, ms", f"{cpus} (median {cpu})", "<= 1.5", cpu <= 1.5),
    ]


def floor_ratios(load: Any) -> dict[str, tuple[float, float, float]]:
    """{"list"|"poll": (podsync over its floor, podsync over bare, floor over bare)}."""
    out = {}
    for name, prefix, floor_prefix in (
        ("list", "list page of 50", "floor: the store calls of a list page"),
        ("poll", "change-feed poll", "floor: the store calls of a poll"),
    ):
        row, floor = load_row(load, prefix), load_row(load, floor_prefix)
        if row and floor:
            out[name] = (round(row["ratio"] / floor["ratio"], 2), row["ratio"], floor["ratio"])
    return out


def load_lines(load: Any) -> list[str]:
    out = []
    floors = floor_ratios(load)
    for name, wanted in (("list", 0.75), ("poll", 0.55)):
        if name in floors:
            ratio, podsync, floor = floors[name]
            out.append(
                line(
                    f"1 process: {name} of its floor",
                    f"{ratio} ({podsync} / {floor} of a bare GET)",
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
