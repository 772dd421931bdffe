"""Helpers of the tests of what is shipped (the one-file binaries and the container
image): a server process whose log is read line by line, and a gpodder round trip
the way the apps make it."""

from __future__ import annotations

import base64
import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, NoReturn

import pytest
from mygpoclient import api

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery staple"
FEED = "https://podcasts.example.org/show/feed.xml"
EPISODE = "https://podcasts.example.org/show/episode-1.mp3"


def cannot_run(reason: str) -> NoReturn:
    """Skip for want of a tool, with one line saying which; a failure in CI
    (.ci/run sets REQUIRE_PACKAGING_TESTS=1 after installing them)."""
    if os.environ.get("REQUIRE_PACKAGING_TESTS"):
        pytest.fail(f"{reason}; REQUIRE_PACKAGING_TESTS is set, so this must not skip")
    pytest.skip(reason)


class Server:
    """A server as a child process; its stderr is collected line by line."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()  # None: end of the log
        self.log: list[str] = []
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, pattern: re.Pattern[str], timeout: float = 30) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if line is None:
                break
            self.log.append(line)
            if match := pattern.search(line):
                return match
        raise AssertionError(f"no {pattern.pattern!r} in the server log:\n{''.join(self.log)}")

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.pump.join(timeout=10)
            assert self.proc.stderr is not None
            self.proc.stderr.close()


def call(
    method: str, url: str, body: Any = None, token: str | None = None
) -> tuple[int, dict[str, Any]]:
    """One Open Podcast API request; (status, JSON body)."""
    headers = {"Content-Type": "application/json", "Client-ID": str(uuid.uuid4())}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    # S310: the URL is a server these tests started, on loopback.
    request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return response.status, json.loads(response.read())


def wait_until_healthy(base: str, timeout: float) -> dict[str, Any]:
    """Poll GET /healthz until it answers 200; its JSON body."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            status, body = call("GET", f"{base}/healthz")
        except (OSError, urllib.error.HTTPError, ValueError) as exc:
            last = exc
        else:
            if status == 200:
                return body
            last = body
        time.sleep(0.5)
    raise AssertionError(f"{base}/healthz did not answer 200 in {timeout:.0f} s: {last}")


def gpodder_login(base: str, name: str, password: str) -> str:
    """Log in like AntennaPod (Basic on the login endpoint); the session cookie."""
    token = base64.b64encode(f"{name}:{password}".encode()).decode("ascii")
    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{base}/api/2/auth/{name}/login.json",
        method="POST",
        headers={"Authorization": f"Basic {token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
        assert response.status == 200
        cookie = response.headers.get("Set-Cookie", "")
    match = re.search(r"sessionid=([^;]+)", cookie)
    assert match, f"no session cookie in {cookie!r}"
    return match.group(1)


def gpodder_push(base: str, name: str, password: str, device: str) -> None:
    """gPodder's own library on one device: a subscription and a played episode."""
    client = api.MygPodderClient(name, password, base)
    assert client.update_device_settings(device, "Phone", "mobile") is True
    result = client.update_subscriptions(device, [FEED], [])
    assert result.since > 0
    action = api.EpisodeAction(
        FEED, EPISODE, "play", device, "2026-05-06T07:08:09", started=0, position=754, total=1800
    )
    assert client.upload_episode_actions([action]) > 0


def gpodder_pull(base: str, name: str, password: str, device: str) -> None:
    """gPodder's own library on another device sees what gpodder_push sent."""
    client = api.MygPodderClient(name, password, base)
    changes = client.pull_subscriptions(device, 0)
    assert (changes.add, changes.remove) == ([FEED], [])
    got = client.download_episode_actions(0)
    assert [(a.podcast, a.episode, a.action, a.position) for a in got.actions] == [
        (FEED, EPISODE, "play", 754)
    ]
