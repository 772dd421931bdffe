"""Servers to import from: the real oPodSync (PHP, from tests/fixtures/opodsync),
an account seeded over the gpodder API, and a small gpodder server that fails half
way through its episode actions."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from podsync.episode_keys import ACTION_NAMES
from tests.support.server_support import free_port

OPODSYNC_SOURCE = Path(__file__).parents[1] / "fixtures" / "opodsync" / "server"
REMOTE_PASSWORD = "remote-secret-9"
FEEDS = [f"https://feeds.example.com/show-{i}/rss" for i in range(4)]
UNSUBSCRIBED = FEEDS[2]
ACTION_KINDS = ("play", "download", "new", "delete")


def actions(count: int = 40) -> list[dict[str, Any]]:
    """`count` episode actions on two devices, each with its own time (UTC, no zone,
    as the apps send it); plays carry positions."""
    out = []
    for i in range(count):
        action: dict[str, Any] = {
            "podcast": FEEDS[(0, 1, 3)[i % 3]],
            "episode": f"https://media.example.com/ep-{i}.mp3",
            "action": ACTION_KINDS[i % 4],
            "timestamp": f"2026-10-{1 + i // 24:02d}T{i % 24:02d}:{i % 60:02d}:07",
            "device": ("phone", "laptop")[i % 2],
        }
        if action["action"] == "play":
            action.update(started=i, position=60 + i, total=3600)
        out.append(action)
    return out


def expected_rows(count: int = 40) -> set[tuple[str, str, int, int | None, str]]:
    """(episode, action, occurred_at µs, position, device) of `actions(count)`."""
    from datetime import UTC, datetime

    rows = set()
    for a in actions(count):
        moment = datetime.fromisoformat(a["timestamp"]).replace(tzinfo=UTC)
        micros = int(moment.timestamp()) * 1_000_000
        rows.add((a["episode"], a["action"], micros, a.get("position"), a["device"]))
    return rows


def stored_actions(db_path: str, name: str) -> set[tuple[str, str, int, int | None, str]]:
    """(episode URL, action, occurred_at µs, position, device) of what podsync stored
    for user `name` (read from its SQLite file as the schema keeps it)."""
    with closing(sqlite3.connect(db_path)) as conn:
        found = conn.execute(
            "SELECT CASE WHEN e.prefixed THEN f.prefix || e.url ELSE e.url END, a.action, "
            "a.occurred_at, a.position, a.device_id FROM episode_actions a "
            "JOIN episodes e ON e.id = a.episode_id JOIN episode_feeds f ON f.id = e.feed_id "
            "JOIN users u ON u.id = a.user_id WHERE u.name = ?",
            (name,),
        ).fetchall()
    return {
        (url, ACTION_NAMES[code], at, position, device) for url, code, at, position, device in found
    }


def call(
    base: str, method: str, path: str, body: Any = None, user: str = "remote"
) -> tuple[int, Any]:
    token = base64.b64encode(f"{user}:{REMOTE_PASSWORD}".encode()).decode()
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(  # noqa: S310 - loopback
        base + path,
        data=data,
        method=method,
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310
            raw = resp.read()
            return resp.status, json.loads(raw) if raw.strip() else None
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode(errors="replace")


def seed_gpodder(base: str, user: str = "remote", count: int = 40) -> None:
    """Subscriptions on two devices, one feed unsubscribed, `count` episode actions."""

    def ok(method: str, path: str, body: Any = None) -> Any:
        status, answer = call(base, method, path, body, user)
        assert status == 200, (method, path, status, answer)
        return answer

    ok("POST", f"/api/2/auth/{user}/login.json")
    ok("POST", f"/api/2/devices/{user}/phone.json", {"caption": "Phone", "type": "mobile"})
    ok("POST", f"/api/2/devices/{user}/laptop.json", {"caption": "Laptop", "type": "laptop"})
    ok("POST", f"/api/2/subscriptions/{user}/phone.json", {"add": FEEDS[:3], "remove": []})
    ok("POST", f"/api/2/subscriptions/{user}/laptop.json", {"add": [FEEDS[3]], "remove": []})
    ok("POST", f"/api/2/subscriptions/{user}/phone.json", {"add": [], "remove": [UNSUBSCRIBED]})
    ok("POST", f"/api/2/episodes/{user}.json", actions(count))


def _php_ready() -> str | None:
    php = shutil.which("php")
    if php is None:
        return "php-cli is not installed"
    probe = subprocess.run(
        [php, "-r", "echo class_exists('SQLite3') ? 'yes' : 'no';"],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if probe.stdout == "yes" else "php-sqlite3 is not installed"


@contextmanager
def opodsync(tmp: Path, users: tuple[str, ...] = ("remote",)) -> Iterator[str]:
    """The real oPodSync under `php -S` on a free port, with `users` (password
    REMOTE_PASSWORD); yields its base URL."""
    missing = _php_ready()
    if missing is not None:
        pytest.skip(f"oPodSync needs PHP: {missing}")
    server = tmp / "opodsync"
    shutil.copytree(OPODSYNC_SOURCE, server)
    data = tmp / "opodsync-data"
    data.mkdir()
    (tmp / "opodsync-sessions").mkdir()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DATA_ROOT": str(data),
        "ERRORS_SHOW": "false",
        "DEBUG_LOG": "null",
        "ENABLE_SUBSCRIPTIONS": "false",
        "PHP_CLI_SERVER_WORKERS": "2",
    }
    argv = ["php", "-d", f"session.save_path={tmp / 'opodsync-sessions'}", "-d"]
    argv += ["display_errors=0", "-S", f"127.0.0.1:{port}", "-t", str(server)]
    proc = subprocess.Popen(
        [*argv, str(server / "index.php")],
        env=env,
        cwd=server,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (data / "data.sqlite").exists():
            assert proc.poll() is None, "php -S exited"
            assert time.monotonic() < deadline, "oPodSync did not start"
            try:  # the first page view creates the database
                urllib.request.urlopen(base + "/", timeout=2).close()  # noqa: S310
            except OSError:
                time.sleep(0.1)
        hashed = subprocess.run(
            ["php", "-r", "echo password_hash($argv[1], PASSWORD_DEFAULT);", REMOTE_PASSWORD],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        with closing(sqlite3.connect(data / "data.sqlite", timeout=10)) as conn, conn:
            for name in users:
                conn.execute("INSERT INTO users (name, password) VALUES (?, ?)", (name, hashed))
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # php -S and its workers: its own group
        proc.wait(timeout=15)


class ThreadedServer:
    """An aiohttp app on a free loopback port, in a thread of its own (the CLI under
    test runs its own event loop in the test's thread)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.calls: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        app = web.Application()
        self.routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    async def _start(self) -> None:
        assert self._runner is not None
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def __exit__(self, *_exc: object) -> None:
        assert self._runner is not None
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    @staticmethod
    def authorized(request: web.Request, user: str = "remote") -> bool:
        token = base64.b64encode(f"{user}:{REMOTE_PASSWORD}".encode()).decode()
        return request.headers.get("Authorization") == f"Basic {token}"


class NotASyncServer(ThreadedServer):
    """A web server that speaks neither API: 404 for every path."""

    def __enter__(self) -> NotASyncServer:
        super().__enter__()
        return self

    def routes(self, app: web.Application) -> None:
        pass


class FlakyGpodder(ThreadedServer):
    """A gpodder server: one device, FEEDS[:2], `count` actions in pages of `page`;
    while `fail_at` is set, the answer of the page starting there is cut off after
    its headers and part of its body (the connection is dropped). `one_second`:
    pages as mygpo does when all actions share one second."""

    def __init__(
        self,
        count: int = 40,
        page: int = 10,
        fail_at: int | None = 20,
        one_second: bool = False,
        items: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__()
        self.actions = actions(count) if items is None else items
        self.page = page
        self.fail_at = fail_at
        # mygpo's paging when every action has the same time T: `since` compared with
        # >=, the answer's timestamp the last action's, so since=T gives the same page.
        self.one_second = one_second

    def __enter__(self) -> FlakyGpodder:
        super().__enter__()
        return self

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/api/2/auth/{user}/login.json", self._login)
        app.router.add_get("/api/2/devices/{user}.json", self._devices)
        app.router.add_get("/api/2/subscriptions/{user}/{device}.json", self._subscriptions)
        app.router.add_get("/api/2/episodes/{user}.json", self._episodes)

    async def _login(self, request: web.Request) -> web.Response:
        self.calls.append("login")
        if not self.authorized(request):
            return web.json_response({"message": "wrong password"}, status=401)
        return web.json_response({})

    async def _devices(self, request: web.Request) -> web.Response:
        return web.json_response([{"id": "phone", "caption": "Phone", "type": "mobile"}])

    async def _subscriptions(self, request: web.Request) -> web.Response:
        return web.json_response({"add": FEEDS[:2], "remove": [], "timestamp": 5})

    async def _episodes(self, request: web.Request) -> web.StreamResponse:
        start = int(request.query.get("since", "0"))
        self.calls.append(f"episodes since={start}")
        chunk = self.actions[start : start + self.page]
        body = json.dumps({"actions": chunk, "timestamp": start + len(chunk)}).encode()
        if self.one_second:
            body = json.dumps({"actions": self.actions[: self.page], "timestamp": 1000}).encode()
        if self.fail_at is None or start != self.fail_at:
            return web.Response(body=body, content_type="application/json")
        response = web.StreamResponse(headers={"Content-Length": str(len(body))})
        response.content_type = "application/json"
        await response.prepare(request)
        await response.write(body[: len(body) // 2])
        assert request.transport is not None
        request.transport.close()  # the connection drops mid-answer
        return response


def play_actions(count: int = 40) -> list[dict[str, Any]]:
    """What the Nextcloud app keeps of `actions(count)`: plays only (it drops the
    rest on upload), with started, position and total."""
    return [a for a in actions(count) if a["action"] == "play"]


class NextcloudGpodderSync(ThreadedServer):
    """The Nextcloud app's API as thrillfall/nextcloud-gpodder answers it
    (appinfo/routes.php, SubscriptionChangeController, EpisodeActionController,
    EpisodeActionRepository): Basic auth on every call, `since` compared with > on
    Unix seconds, `timestamp` the server's clock, an action's time in ISO 8601 with
    its offset (PHP's "c"), guid null when none, -1 for an absent position; one
    answer each, no paging. Any other path redirects to the sign-in page."""

    def __init__(self, count: int = 40) -> None:
        super().__init__()
        self.actions = play_actions(count)

    def __enter__(self) -> NextcloudGpodderSync:
        super().__enter__()
        return self

    def routes(self, app: web.Application) -> None:
        prefix = "/index.php/apps/gpoddersync"
        app.router.add_get(f"{prefix}/subscriptions", self._subscriptions)
        app.router.add_get(f"{prefix}/episode_action", self._episode_actions)
        app.router.add_route("*", "/{tail:.*}", self._elsewhere)

    async def _elsewhere(self, request: web.Request) -> web.Response:
        """A path Nextcloud has no route for: off to its sign-in page."""
        self.calls.append(request.path_qs)
        raise web.HTTPFound("/index.php/login")

    def _refused(self, request: web.Request) -> web.Response | None:
        self.calls.append(request.path_qs)
        if self.authorized(request):
            return None
        return web.json_response({"message": "Current user is not logged in"}, status=401)

    async def _subscriptions(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        since = int(request.query.get("since", "0"))
        add = FEEDS[:2] if since < 1_000_000 else []
        remove = [FEEDS[2]] if since < 1_000_000 else []
        return web.json_response({"add": add, "remove": remove, "timestamp": int(time.time())})

    async def _episode_actions(self, request: web.Request) -> web.Response:
        from datetime import UTC, datetime

        if (refused := self._refused(request)) is not None:
            return refused
        since = int(request.query.get("since", "0"))
        out = []
        for a in self.actions:
            moment = datetime.fromisoformat(a["timestamp"]).replace(tzinfo=UTC)
            if int(moment.timestamp()) <= since:
                continue
            out.append(
                {
                    "podcast": a["podcast"],
                    "episode": a["episode"],
                    "timestamp": moment.isoformat(),  # PHP's "c": 2026-10-01T00:00:07+00:00
                    "guid": None,
                    "position": a.get("position", -1),
                    "started": a.get("started", -1),
                    "total": a.get("total", -1),
                    "action": a["action"].upper(),
                }
            )
        return web.json_response({"actions": out, "timestamp": int(time.time())})
