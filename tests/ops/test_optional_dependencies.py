"""asyncpg (the `postgres` extra) and prometheus-client (the `metrics` extra) are
loaded only when the configuration needs them. Checked on real `podsync serve`
processes and the real CLI: Python's own import log (-X importtime) of a SQLite
server that served logins, syncs and gpodder calls names neither; a server and the
CLI run with both made unimportable, as on an install without the extras; and a
setting that needs a missing extra stops with one line naming it."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.conftest import PASSWORD
from tests.support.server_process import start_listening

OPTIONAL = ("asyncpg", "prometheus_client")
# Runs the CLI with the named modules unimportable (sys.modules[name] = None makes
# `import name` raise ImportError), as when the extra is not installed.
WITHOUT = (
    "import sys\n"
    "for name in sys.argv[1].split(','):\n"
    "    sys.modules[name] = None\n"
    "sys.argv = ['podsync', *sys.argv[2:]]\n"
    "from podsync.cli import main\n"
    "main()\n"
)


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PODSYNC_", "XDG_"))}
    env.pop("STATE_DIRECTORY", None)
    env.update(
        PODSYNC_DATABASE_PATH=str(tmp_path / "podsync.db"),
        PODSYNC_LOG_ACCESS_LOG="false",
        PODSYNC_FEEDS_FETCH_METADATA="false",  # no feed of these tests is served
        **extra,
    )
    return env


def without(modules: tuple[str, ...], *args: str) -> list[str]:
    return [sys.executable, "-c", WITHOUT, ",".join(modules), *args]


def start(argv: list[str], env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    return start_listening(argv, log, env)


def stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=30)


def call(
    url: str, body: object = None, method: str | None = None, **headers: str
) -> tuple[int, bytes]:
    """One request: `body` as JSON, or bytes as they are."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def basic_auth() -> str:
    return "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()


def exercise(base: str) -> None:
    """A login, an OPA sync, a listing, gpodder calls and the page."""
    json_type = {"Content-Type": "application/json"}
    status, body = call(
        base + "/auth/login", {"username": "alice", "password": PASSWORD}, **json_type
    )
    assert status == 200, body
    bearer = {"Authorization": "Bearer " + json.loads(body)["access_token"], **json_type}
    action = {
        "action_id": "6f1b0a39-9f61-4b0a-8f3f-000000000001",
        "type": "subscription",
        "action": "subscribe",
        "occurred_at": "2026-11-22T07:00:00Z",
        "data": {"feed_url": "https://feeds.example.org/podcast.xml"},
    }
    assert call(base + "/api/v1/sync", {"requests": [action]}, **bearer)[0] == 200
    assert call(base + "/api/v1/subscriptions", **bearer)[0] == 200
    basic = {"Authorization": basic_auth()}
    assert call(base + "/api/2/devices/alice.json", **basic)[0] == 200
    assert call(base + "/api/2/subscriptions/alice/phone.json?since=0", **basic)[0] == 200
    assert call(base + "/")[0] == 200
    assert call(base + "/healthz")[0] == 200
    assert call(base + "/metrics")[0] == 404


def imported(log: str) -> set[str]:
    """Top-level packages named in a -X importtime log."""
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*([\w.]+)", log, re.MULTILINE)
    return {name.split(".")[0] for name in names}


def add_alice(env: dict[str, str], argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*argv, "user", "add", "alice", "--password-stdin"],
        env=env, input=PASSWORD, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_sqlite_server_never_imports_the_optional_libraries(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    importtime = [sys.executable, "-X", "importtime", "-m", "podsync"]
    added = add_alice(env, importtime)
    assert added.returncode == 0, added.stderr
    assert imported(added.stderr) & set(OPTIONAL) == set()

    log = tmp_path / "serve.log"
    proc, base = start([*importtime, "serve", "--port", "0"], env, log)
    try:
        exercise(base)
    finally:
        assert stop(proc) == 0
    seen = imported(log.read_text())
    assert "aiohttp" in seen and "podsync" in seen  # the log is read right
    assert seen & set(OPTIONAL) == set()

    # The same check sees prometheus_client when metrics are on.
    log = tmp_path / "metrics.log"
    env_metrics = {**env, "PODSYNC_SERVER_METRICS": "true"}
    proc, base = start([*importtime, "serve", "--port", "0"], env_metrics, log)
    try:
        assert call(base + "/metrics")[0] == 200
    finally:
        assert stop(proc) == 0
    assert "prometheus_client" in imported(log.read_text())
    assert "asyncpg" not in imported(log.read_text())


def test_jinja2_argon2_and_the_opml_parser_load_only_when_used(tmp_path: Path) -> None:
    """Idle memory: a server holds none of Jinja2, argon2, the XML parser and its HTML
    entity table, time zones or the name suggester at start; each is loaded by what
    needs it (the web UI's first page, a login, an OPML upload). The feed fetcher's
    libraries stay out unless it is switched on."""
    lazy = {"jinja2", "argon2", "xml", "zoneinfo", "difflib"}
    env = env_for(tmp_path)
    importtime = [sys.executable, "-X", "importtime", "-m", "podsync"]
    assert add_alice(env, importtime).returncode == 0
    log = tmp_path / "serve.log"
    proc, base = start([*importtime, "serve", "--port", "0"], env, log)
    try:
        assert call(base + "/healthz")[0] == 200
        assert imported(log.read_text()) & lazy == set()
        exercise(base)  # a login among others
        assert imported(log.read_text()) & {"jinja2", "argon2"} == {"argon2"}
        assert call(base + "/ui/login")[0] == 200
        assert "jinja2" in imported(log.read_text())
        opml = (
            b'<?xml version="1.0"?><opml version="2.0"><body>'
            b'<outline type="rss" text="Caf&eacute;" xmlUrl="https://example.org/f.xml"/>'
            b"</body></opml>"
        )
        url = base + "/subscriptions/alice/laptop.opml"
        assert call(url, opml, "PUT", Authorization=basic_auth())[0] == 200
        assert "xml" in imported(log.read_text())
    finally:
        assert stop(proc) == 0
    assert imported(log.read_text()) & {"feedparser", "sgmllib"} == set()


def test_the_feed_parser_loads_with_the_first_feed_to_read(tmp_path: Path) -> None:
    """Idle memory with the feed fetcher on (the default): the fetcher runs, but the
    feed parser and its XML and HTML parsers load only when there is a feed to read."""
    env = {**env_for(tmp_path), "PODSYNC_FEEDS_FETCH_METADATA": "true"}
    importtime = [sys.executable, "-X", "importtime", "-m", "podsync"]
    log = tmp_path / "serve.log"
    proc, base = start([*importtime, "serve", "--port", "0"], env, log)
    try:
        assert call(base + "/healthz")[0] == 200
        time.sleep(1)  # the fetcher's first pass: nothing due
        seen = imported(log.read_text())
    finally:
        assert stop(proc) == 0
    assert "fetching subscribed feeds" in log.read_text()
    assert seen & {"feedparser", "sgmllib", "xml"} == set()


def test_without_the_extras_a_sqlite_server_and_the_cli_work(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    added = add_alice(env, without(OPTIONAL))
    assert added.returncode == 0, added.stderr
    log = tmp_path / "serve.log"
    proc, base = start(without(OPTIONAL, "serve", "--port", "0"), env, log)
    try:
        exercise(base)
    finally:
        assert stop(proc) == 0
    for args in (["user", "list"], ["db", "check"], ["config", "show"], ["config", "check"]):
        done = subprocess.run(
            without(OPTIONAL, *args), env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, (args, done.stderr)


def test_a_database_url_without_the_postgres_extra_names_it(tmp_path: Path) -> None:
    env = env_for(tmp_path, PODSYNC_DATABASE_URL="postgresql://podsync:secret@127.0.0.1:1/podsync")
    for args in (["serve", "--port", "0"], ["user", "list"], ["db", "migrate"]):
        done = subprocess.run(
            without(("asyncpg",), *args), env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 1, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr  # one line, no traceback
        assert lines[0].startswith("Error: ")
        assert "pip install 'podsync[postgres]'" in lines[0]
        assert "secret" not in done.stderr
    assert not (tmp_path / "podsync.db").exists()


def test_metrics_without_the_metrics_extra_names_it(tmp_path: Path) -> None:
    env = env_for(tmp_path, PODSYNC_SERVER_METRICS="true")
    done = subprocess.run(
        without(("prometheus_client",), "serve", "--port", "0"),
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("Error: ") and "pip install 'podsync[metrics]'" in lines[-1]
    assert "Traceback" not in done.stderr
    # `config check` says the same before a restart.
    checked = subprocess.run(
        without(("prometheus_client",), "config", "check"),
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert checked.returncode == 1
    assert "pip install 'podsync[metrics]'" in checked.stderr
