"""A Nextcloud sync round against the gpodder one, with an app password, on a real
`podsync serve` over loopback.

    python bench/nextcloud.py [--rounds 200]

A round is what AntennaPod does each sync: pull subscriptions, pull episode actions,
push 30 new episode actions. On the Nextcloud API (`/index.php/apps/gpoddersync/`,
`since` in seconds, AntennaPod's own clock stored after the push) and on the gpodder
API (`/api/2/`, the cursor of the last answer), both with HTTP Basic and the same
app password made by `podsync user app-passwords --create` (checked without argon2).
The account has 200 feeds. Prints wall time per round (median, p99) and the server's
CPU per round (user + system from /proc), and counts every answer that is not 200:
a bench whose calls are refused measures nothing. The action bound is raised so
that no push is refused.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harness import PASSWORD, free_port, podsync_server, quiet_env, write_podsync_config

NC = "/index.php/apps/gpoddersync"
FEEDS = [f"https://feeds.example.org/show/{i}/rss" for i in range(200)]
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


class Client:
    def __init__(self, port: int, user: str, password: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}"}
        self.refused = 0
        self.calls = 0

    def call(self, method: str, path: str, body: object = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        self.conn.request(method, path, body=data, headers=self.headers)
        response = self.conn.getresponse()
        payload = response.read()
        self.calls += 1
        if response.status != 200:
            self.refused += 1
            return None
        return json.loads(payload) if payload else None


def actions(round_no: int, device: str) -> list[dict[str, object]]:
    return [
        {
            "podcast": FEEDS[n],
            "episode": f"https://feeds.example.org/show/{n}/{device}-{round_no}.mp3",
            "guid": f"{device}-{round_no}-{n}",
            "action": "play",
            "timestamp": "2026-11-25T10:00:00",
            "started": 0,
            "position": 60 + round_no,
            "total": 3600,
        }
        for n in range(30)
    ]


def nextcloud_round(client: Client) -> Callable[[int], None]:
    state = {"subs": 0, "actions": 0}

    def run(i: int) -> None:
        answer = client.call("GET", f"{NC}/subscriptions?since={state['subs']}")
        if isinstance(answer, dict):
            state["subs"] = int(answer["timestamp"])
        answer = client.call("GET", f"{NC}/episode_action?since={state['actions']}")
        client.call("POST", f"{NC}/episode_action/create", actions(i, "nc"))
        state["actions"] = int(time.time())  # AntennaPod: its own clock after a push

    return run


def gpodder_round(client: Client, user: str) -> Callable[[int], None]:
    state = {"subs": 0, "actions": 0}

    def run(i: int) -> None:
        answer = client.call("GET", f"/api/2/subscriptions/{user}/phone.json?since={state['subs']}")
        if isinstance(answer, dict):
            state["subs"] = int(answer["timestamp"])
        client.call("GET", f"/api/2/episodes/{user}.json?since={state['actions']}")
        pushed = [{**a, "device": "phone"} for a in actions(i, "gp")]
        answer = client.call("POST", f"/api/2/episodes/{user}.json", pushed)
        if isinstance(answer, dict):
            state["actions"] = int(answer["timestamp"])

    return run


def measure(pid: int, rounds: int, step: Callable[[int], None]) -> tuple[list[float], float]:
    for i in range(5):  # warm-up rounds (first pulls are whole)
        step(-1 - i)
    times = []
    cpu_before = cpu_seconds(pid)
    for i in range(rounds):
        start = time.perf_counter()
        step(i)
        times.append((time.perf_counter() - start) * 1000)
    return times, (cpu_seconds(pid) - cpu_before) * 1000 / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, quiet_env():
        workdir = Path(tmp)
        port = free_port()
        config = write_podsync_config(
            workdir, port, {"gpodder": {"max_episode_actions_per_user": 10_000_000}}
        )
        base = [sys.executable, "-m", "podsync", "--config", str(config), "user"]
        for user in ("nc", "gp"):
            subprocess.run(
                [*base, "add", user, "--password-stdin"],
                input=PASSWORD.encode(),
                check=True,
                capture_output=True,
            )
        secrets = {
            user: subprocess.run(
                [*base, "app-passwords", user, "--create", "bench phone"],
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
            for user in ("nc", "gp")
        }
        with podsync_server(workdir, config, port) as server:
            rows = []
            for user, name in (("nc", "Nextcloud"), ("gp", "gpodder")):
                client = Client(port, user, secrets[user])
                path = (
                    f"{NC}/subscription_change/create"
                    if user == "nc"
                    else (f"/api/2/subscriptions/{user}/phone.json")
                )
                client.call("POST", path, {"add": FEEDS, "remove": []})
                step = nextcloud_round(client) if user == "nc" else gpodder_round(client, user)
                times, cpu_ms = measure(server.pid, args.rounds, step)
                p99 = statistics.quantiles(times, n=100)[98]
                rows.append(
                    f"| {name} | {args.rounds} | {statistics.median(times):.2f} | {p99:.2f} "
                    f"| {cpu_ms:.2f} | {client.refused} of {client.calls} |"
                )
    print(f"load average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    print("| API | rounds | median ms | p99 ms | server CPU ms per round | not 200 |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
