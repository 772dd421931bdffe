"""Years of listening in one account: podsync beside oPodSync, one table.

One account with 200,000 play actions over 1,000 podcasts (each action its own
episode), 2,000 subscriptions and 5 devices, filled with the same requests on both
servers (4 subscription pushes of 500 feeds, 200 episode pushes of 1,000 actions,
one at a time), then a new phone's full pulls. It measures what the shared benches'
`heavy_user.py` measures (the same requests), and two things more: the server's CPU
time of the fill, and each pull's own memory peak: the
server's peak RSS is reset (`/proc/PID/clear_refs`) before a pull and read after,
minus its RSS before (a peak read without the reset keeps the first login's, argon2
takes 64 MiB for a hash).

    python bench/heavy_user.py                      # podsync from PATH, oPodSync vendored
    python bench/heavy_user.py --only podsync --actions 50000
    python bench/heavy_user.py --json               # one JSON object

oPodSync runs from tests/fixtures/opodsync under `php -S` with two workers (as the
shared peer benches do); it needs php-cli and php-sqlite3.
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import contextlib
import http.client
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OPODSYNC = ROOT / "tests" / "fixtures" / "opodsync" / "server"
PASSWORD = "bench-password-1"
USER = "heavy"
DEVICES = [f"phone{i}" for i in range(5)]
NC = "/index.php/apps/gpoddersync/episode_action?since=0"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Client:
    """Keep-alive HTTP with Basic credentials (and the cookie a login sets)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        response = self.conn.getresponse()
        payload = response.read()
        cookie = response.getheader("Set-Cookie")
        if cookie:
            self.headers["Cookie"] = cookie.split(";", 1)[0]
        return response.status, payload


def tree(pid: int) -> list[int]:
    out = [pid]
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    for child in children.stdout.split():
        out += tree(int(child))
    return out


def status_kb(pid: int, key: str) -> int:
    total = 0
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith(key + ":"):
                    total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def reset_peak(pid: int) -> None:
    for p in tree(pid):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, PermissionError):
            Path(f"/proc/{p}/clear_refs").write_text("5")


def cpu_s(pid: int) -> float:
    total = 0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def dir_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)


def wait_up(port: int, path: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(400):
        if proc.poll() is not None:
            raise RuntimeError(f"the server on port {port} exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", path)
            conn.getresponse().read()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing answers on port {port}")


def start_podsync(work: Path, exe: str) -> tuple[subprocess.Popen[bytes], int, Path]:
    data = work / "podsync"
    data.mkdir()
    port = free_port()
    config = work / "podsync.toml"
    config.write_text(
        f'[server]\nhost = "127.0.0.1"\nport = {port}\n[database]\npath = "{data / "p.db"}"\n'
        "[log]\naccess_log = false\n[feeds]\nfetch_metadata = false\n"
    )
    subprocess.run([exe, "--config", str(config), "user", "add", USER, "--password-stdin"],
                   input=(PASSWORD + "\n").encode(), check=True, capture_output=True)  # fmt: skip
    proc = subprocess.Popen([exe, "--config", str(config), "serve"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    wait_up(port, "/healthz", proc)
    return proc, port, data


def start_opodsync(work: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    server = work / "opodsync"
    shutil.copytree(OPODSYNC, server)
    data = work / "odata"
    data.mkdir()
    (work / "sessions").mkdir()
    port = free_port()
    env = {**os.environ, "DATA_ROOT": str(data), "PHP_CLI_SERVER_WORKERS": "2",
           "ERRORS_SHOW": "false", "DEBUG_LOG": "null",
           "ENABLE_SUBSCRIPTIONS": "false"}  # fmt: skip
    options = ["-d", "opcache.enable=1", "-d", "opcache.enable_cli=1", "-d",
               f"session.save_path={work / 'sessions'}", "-d", "display_errors=0", "-d",
               "memory_limit=-1"]  # fmt: skip
    proc = subprocess.Popen(
        ["php", *options, "-S", f"127.0.0.1:{port}", "-t", str(server), str(server / "index.php")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=server,
        start_new_session=True,
    )  # fmt: skip
    wait_up(port, "/", proc)
    database = data / "data.sqlite"
    for _ in range(100):
        if database.exists():
            break
        time.sleep(0.05)
    script = "echo password_hash($argv[1], PASSWORD_DEFAULT);"
    hashed = subprocess.run(["php", "-r", script, PASSWORD], capture_output=True, text=True,
                            check=True).stdout  # fmt: skip
    with sqlite3.connect(database, timeout=10) as con:
        con.execute("INSERT INTO users (name, password) VALUES (?, ?)", (USER, hashed))
    return proc, port, data


def actions_batch(start: int, end: int, feeds: list[str], nfeeds: int) -> list[dict[str, Any]]:
    """Plays `start` to `end`: each its own episode, over `nfeeds` podcasts and the
    5 devices in turn (the shared bench's requests, byte for byte)."""
    out = []
    for j in range(start, end):
        f = j % nfeeds
        when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(1_600_000_000 + j * 60))
        out.append({"podcast": feeds[f % len(feeds)],
                    "episode": f"https://media.example.org/show{f}/ep{j // nfeeds}.mp3",
                    "guid": f"show{f}-ep{j // nfeeds}", "action": "play", "timestamp": when,
                    "started": 0, "position": 60 + j % 3000, "total": 3600,
                    "device": DEVICES[j % 5]})  # fmt: skip
    return out


def pull_peak(
    proc: subprocess.Popen[bytes], port: int, path: str, at_once: int, cookie: str
) -> dict[str, Any]:
    """`at_once` full pulls at the same time: wall time, answer size, the peak RSS
    above the RSS before (the peak reset first), the server's CPU."""
    idle = status_kb(proc.pid, "VmRSS")
    reset_peak(proc.pid)
    cpu = cpu_s(proc.pid)

    def one(_: int) -> tuple[int, int]:
        client = Client(port)
        client.headers["Cookie"] = cookie  # the login's session, as a phone keeps it
        status, body = client.call("GET", path)
        return status, len(body)

    began = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(at_once) as pool:
        answers = list(pool.map(one, range(at_once)))
    took = time.perf_counter() - began
    peak = status_kb(proc.pid, "VmHWM")
    return {
        "s": round(took, 2),
        "mb": round(answers[0][1] / 1e6, 1),
        "statuses": sorted({s for s, _ in answers}),
        "peak_over_idle_mb": round((peak - idle) / 1024, 1),
        "idle_rss_mb": round(idle / 1024, 1),
        "server_cpu_s": round(cpu_s(proc.pid) - cpu, 2),
    }


def measure(
    name: str, proc: subprocess.Popen[bytes], port: int, data: Path, a: Any
) -> dict[str, Any]:
    feeds = [f"https://feeds.example.org/show{i}/rss.xml" for i in range(a.subs)]
    client = Client(port)
    status, _ = client.call("POST", f"/api/2/auth/{USER}/login.json")
    assert status == 200, (name, status)
    out: dict[str, Any] = {}
    cpu, began = cpu_s(proc.pid), time.perf_counter()
    for device in DEVICES:
        client.call("POST", f"/api/2/subscriptions/{USER}/{device}.json", {"add": [], "remove": []})
    for i in range(0, a.subs, 500):
        status, body = client.call("POST", f"/api/2/subscriptions/{USER}/{DEVICES[0]}.json",
                                   {"add": feeds[i : i + 500], "remove": []})  # fmt: skip
        assert status == 200, (name, status, body[:200])
    for i in range(0, a.actions, 1000):
        batch = actions_batch(i, min(i + 1000, a.actions), feeds, max(1, a.actions // 200))
        status, body = client.call("POST", f"/api/2/episodes/{USER}.json", batch)
        assert status == 200, (name, i, status, body[:200])
    out["fill_s"] = round(time.perf_counter() - began, 1)
    out["fill_server_cpu_s"] = round(cpu_s(proc.pid) - cpu, 1)
    time.sleep(1.5)
    out["db_mb"] = dir_mb(data)  # as the shared bench: the write-ahead log included
    time.sleep(11)  # podsync truncates its log after 10 s without a write
    out["db_mb_settled"] = dir_mb(data)
    cookie = client.headers.get("Cookie", "")
    episodes = f"/api/2/episodes/{USER}.json?since=0"
    out["gpodder_full_pull"] = pull_peak(proc, port, episodes, 1, cookie)
    out["gpodder_full_pull_x4"] = pull_peak(proc, port, episodes, a.conc, cookie)
    if name == "podsync":
        out["nextcloud_full_pull"] = pull_peak(proc, port, NC, 1, cookie)
        out["nextcloud_full_pull_x4"] = pull_peak(proc, port, NC, a.conc, cookie)
    return out


def table(result: dict[str, Any]) -> str:
    p, o = result.get("podsync", {}), result.get("opodsync", {})

    def pull(r: dict[str, Any]) -> str:
        peak = r["peak_over_idle_mb"]
        return f"{r['mb']} MB, {r['s']} s, +{peak} MB peak RSS, {r['server_cpu_s']} s CPU"

    rows = [
        ("database on disk after the fill (after 12 s)",
         f"{p.get('db_mb')} MB ({p.get('db_mb_settled')} MB)",
         f"{o.get('db_mb')} MB ({o.get('db_mb_settled')} MB)"),
        ("the fill (wall; server CPU)", f"{p.get('fill_s')} s; {p.get('fill_server_cpu_s')} s",
         f"{o.get('fill_s')} s; {o.get('fill_server_cpu_s')} s"),
    ]  # fmt: skip
    if p:
        rows.append(("full pull, gpodder API (since=0)", pull(p["gpodder_full_pull"]),
                     pull(o["gpodder_full_pull"]) if o else "-"))  # fmt: skip
        rows.append((f"the same, {result['conc']} at once", pull(p["gpodder_full_pull_x4"]),
                     pull(o["gpodder_full_pull_x4"]) if o else "-"))  # fmt: skip
        rows.append(("full pull, Nextcloud API (since=0)", pull(p["nextcloud_full_pull"]), "-"))
        rows.append((f"the same, {result['conc']} at once", pull(p["nextcloud_full_pull_x4"]), "-"))
    lines = ["| | podsync | oPodSync |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--podsync", default=shutil.which("podsync") or "podsync")
    ap.add_argument("--actions", type=int, default=200_000)
    ap.add_argument("--subs", type=int, default=2000)
    ap.add_argument("--conc", type=int, default=4)
    ap.add_argument("--only", default="opodsync,podsync")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    result: dict[str, Any] = {"actions": a.actions, "subs": a.subs, "conc": a.conc,
                              "load_before": os.getloadavg()}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="heavy-user-") as work:
        for name in ("opodsync", "podsync"):
            if name not in a.only:
                continue
            place = Path(work) / name
            place.mkdir()
            starter = (
                start_podsync(place, a.podsync) if name == "podsync" else start_opodsync(place)
            )
            proc, port, data = starter
            try:
                result[name] = measure(name, proc, port, data, a)
            finally:
                os.killpg(proc.pid, 15)
                proc.wait(timeout=30)
    result["load_after"] = os.getloadavg()
    loads = f"load average before/after: {result['load_before']} / {result['load_after']}"
    print(json.dumps(result) if a.json else f"{table(result)}\n\n{loads}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
