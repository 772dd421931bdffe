"""The memory of one `podsync serve` on the defaults, as a newcomer's first hour
leaves it: RSS when it starts, then after an app synced 30 subscriptions and 300
plays and a person walked the web UI's pages five times.

    python bench/first_hour_memory.py            # the defaults
    python bench/first_hour_memory.py --metrics  # server.metrics = true (the metrics extra)

It runs the `podsync` beside this Python (the venv's), in a scratch HOME, on
127.0.0.1 only, and prints one line. The README's memory figures come from it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

PASSWORD = "correct-horse-battery"
PAGES = [
    "/ui/",
    "/ui/subscriptions",
    "/ui/history",
    "/ui/devices",
    "/ui/stats",
    "/ui/search?q=e",
    "/ui/new",
    "/ui/up-next",
    "/ui/account",
]


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+)", status)
    assert found is not None
    return int(found.group(1)) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", action="store_true")
    parser.add_argument("--port", type=int, default=18090)
    args = parser.parse_args()
    podsync = str(Path(sys.executable).parent / "podsync")
    home = tempfile.mkdtemp(prefix="podsync-memory-")
    env = dict(
        os.environ,
        HOME=home,
        XDG_CONFIG_HOME=f"{home}/.config",
        XDG_DATA_HOME=f"{home}/.local/share",
    )
    os.makedirs(f"{home}/.config/podsync")
    Path(f"{home}/.config/podsync/podsync.toml").write_text(
        f"[server]\nport = {args.port}\nmetrics = {str(args.metrics).lower()}\n"
    )
    subprocess.run(
        [podsync, "user", "add", "alice", "--admin", "--password-stdin"],
        input=f"{PASSWORD}\n".encode(),
        env=env,
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        [podsync, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{args.port}"
    try:
        for _ in range(150):
            try:
                requests.get(base + "/healthz", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.2)
        started = rss_mb(server.pid)
        app = requests.Session()
        app.auth = ("alice", PASSWORD)
        feeds = [f"https://example.com/feed{i}.xml" for i in range(30)]
        app.post(f"{base}/api/2/auth/alice/login.json", timeout=30).raise_for_status()
        app.post(
            f"{base}/api/2/subscriptions/alice/phone.json",
            json={"add": feeds, "remove": []},
            timeout=30,
        ).raise_for_status()
        plays = [
            {
                "podcast": feeds[i % 30],
                "episode": f"https://example.com/e{i}.mp3",
                "action": "play",
                "started": 0,
                "position": 60,
                "total": 600,
                "timestamp": "2026-11-20T10:00:00",
            }
            for i in range(300)
        ]
        app.post(f"{base}/api/2/episodes/alice.json", json=plays, timeout=30).raise_for_status()
        person = requests.Session()
        form = person.get(f"{base}/ui/login", timeout=30).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        data = {"username": "alice", "password": PASSWORD}
        if token:
            data["csrf_token"] = token.group(1)
        person.post(f"{base}/ui/login", data=data, timeout=30)
        if "Sign out" not in person.get(f"{base}/ui/", timeout=30).text:
            sys.exit("could not sign in to the web UI")
        for path in PAGES * 5:
            person.get(base + path, timeout=30).raise_for_status()
        if args.metrics:
            requests.get(base + "/metrics", timeout=30).raise_for_status()
        time.sleep(1)
        label = "metrics on" if args.metrics else "defaults"
        print(
            f"{label}: {started:.1f} MB when started, {rss_mb(server.pid):.1f} MB after "
            "an app synced and the web UI was used"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
