"""The one-file executable, built by packaging/build.sh, works on its own.

The binary is copied alone into an empty directory and run from there with no
virtualenv, no PYTHONPATH and no PODSYNC_* variables, the way an admin would run
it after copying it to /usr/local/bin. Runs with RUN_PACKAGING_TESTS=1 (.ci/run
sets it). (The arm64 build, made under emulation, is tested in
tests/packaging/test_arm64.py.)
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import urllib.request
import uuid
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.support.packaged_support import FEED, PASSWORD, Server, call

pytestmark = pytest.mark.executable

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "packaging" / "build.sh"
IMPORTED_FEED = "https://other.example.net/rss?id=7&amp;fmt=mp3"
OPML = f"""<?xml version="1.0" encoding="UTF-8"?>
<opml version="2.0"><head><title>from my phone</title></head><body>
  <outline text="Show" type="rss" xmlUrl="{FEED}"/>
  <outline text="Other" type="rss" xmlUrl="{IMPORTED_FEED}"/>
</body></opml>
"""
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


def _cannot_freeze_reason() -> str | None:
    if sys.platform not in ("linux", "darwin"):
        return f"packaging/build.sh is a POSIX shell script; this is {sys.platform}"
    if sys.platform == "linux" and not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return "PyInstaller needs a Python built with --enable-shared (no libpython here)"
    return None


@pytest.fixture(scope="session")
def podsync_binary() -> Path:
    """Build dist/podsync-linux-MACHINE once per test session (build.sh reuses its venv)."""
    reason = _cannot_freeze_reason()
    if reason:
        pytest.skip(reason)
    env = {**os.environ, "PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", str(BUILD_SCRIPT)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"packaging/build.sh failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return ROOT / "dist" / f"podsync-linux-{platform.machine()}"


def _bare_env(tmp: Path) -> dict[str, str]:
    """The environment minus anything Python- or venv-related and any PODSYNC_* setting."""
    venv_bins = {str(Path(sys.prefix) / "bin"), str(Path(sys.executable).parent)}
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PODSYNC_"))
    }
    path = [p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep) if p not in venv_bins]
    env["PATH"] = os.pathsep.join(path)
    env["TMPDIR"] = str(tmp)  # where the one-file bundle unpacks; checked for leftovers
    return env


@pytest.fixture
def installed(podsync_binary: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """(the binary copied alone, beside only its config, into an empty dir; the bare env)."""
    workdir = tmp_path / "srv"
    workdir.mkdir()
    unpack = tmp_path / "tmp"
    unpack.mkdir()
    binary = workdir / "podsync"
    shutil.copy2(podsync_binary, binary)
    (workdir / "podsync.toml").write_text(
        '[server]\nport = 0\n\n[database]\npath = "data/podsync.db"\n'
        "[feeds]\nfetch_metadata = false\n"  # its feeds are not served anywhere
    )
    (workdir / "data").mkdir()
    return binary, _bare_env(unpack)


def run(binary: Path, env: dict[str, str], *args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [str(binary), *args],
        cwd=binary.parent,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"podsync {' '.join(args)}: {done.returncode}\n{done.stderr}"
    return done.stdout


def test_the_bundle_holds_the_compiled_bindings_data_and_metadata(podsync_binary: Path) -> None:
    viewer = ROOT / "build" / "venv" / "bin" / "pyi-archive_viewer"
    listing = subprocess.run(
        [str(viewer), "--recursive", "--brief", str(podsync_binary)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    names = {line.strip().strip("'") for line in listing.splitlines()}
    assert "podsync/web/opa/openapi.json" in names
    assert "podsync/web/ui/templates/subscriptions.html" in names
    assert "podsync/web/ui/static/ui.css" in names
    assert f"podsync-{version('podsync')}.dist-info/METADATA" in names
    for module in (
        "listparser",
        "sqlite3",
        "prometheus_client",
        "idna",
        "argon2",
        "podsync.cli.opml",
        "podsync.serve.server",
    ):
        assert module in names, module
    for compiled in ("_argon2_cffi_bindings/_ffi.", "_cffi_backend.", "aiohttp/_http_parser."):
        assert any(name.startswith(compiled) for name in names), compiled
    # Optional parsers that would change how listparser reads OPML stay out.
    assert not any(name.startswith(("lxml", "requests")) for name in names)


def test_version_matches_the_package(installed: tuple[Path, dict[str, str]]) -> None:
    binary, env = installed
    assert run(binary, env, "--version").strip() == f"podsync {version('podsync')}"


def test_the_binary_alone_serves_syncs_exports_and_stops_on_sigterm(
    installed: tuple[Path, dict[str, str]],
) -> None:
    binary, env = installed
    assert "user alice created" in run(
        binary, env, "user", "add", "alice", "--password-stdin", stdin=PASSWORD + "\n"
    )

    server = Server([str(binary), "serve"], env, binary.parent)
    try:
        base = server.wait_for(LISTENING).group(1)
        health = {"status": "ok", "version": version("podsync")}
        assert call("GET", f"{base}/healthz") == (200, health)

        # The web UI's templates and style sheet came along: its sign-in page renders.
        with urllib.request.urlopen(f"{base}/ui/login", timeout=10) as response:  # noqa: S310
            assert response.status == 200
            assert '<button type="submit">Sign in</button>' in response.read().decode()
        with urllib.request.urlopen(f"{base}/ui/static/ui.css", timeout=10) as response:  # noqa: S310
            assert b"prefers-color-scheme" in response.read()

        status, document = call("GET", f"{base}/api/v1/openapi.json")
        assert status == 200
        assert document["openapi"].startswith("3.1")

        status, tokens = call(
            "POST", f"{base}/auth/login", {"username": "alice", "password": PASSWORD}
        )
        assert status == 200
        access = tokens["access_token"]

        action_id = str(uuid.uuid4())
        subscribe = {
            "action_id": action_id,
            "occurred_at": "2026-01-02T03:04:05Z",
            "type": "subscription",
            "action": "subscribe",
            "data": {"feed_url": FEED},
        }
        status, synced = call("POST", f"{base}/api/v1/sync", {"requests": [subscribe]}, access)
        assert status == 200
        [result] = synced["results"]
        assert (result["action_id"], result["status"]) == (action_id, "applied")

        status, page = call("GET", f"{base}/api/v1/subscriptions", token=access)
        assert status == 200
        assert [s["feed_url"] for s in page["results"]] == [FEED]
        assert page["results"][0]["sync_id"] == result["data"]["sync_id"]

        # The CLI works on the same database while the server runs; import parses
        # with the bundled listparser.
        (binary.parent / "phone.opml").write_text(OPML)
        report = run(binary, env, "opml", "import", "alice", "phone.opml").splitlines()
        assert "added: 1" in report
        assert "already subscribed: 1" in report
        opml = run(binary, env, "opml", "export", "alice")
        assert f'xmlUrl="{FEED}"' in opml
        assert f'xmlUrl="{IMPORTED_FEED}"' in opml
    finally:
        code = server.stop()
    assert code == 0, "".join(server.log)
    server.wait_for(re.compile(r"\bstopped\b"), timeout=5)
    # The bootloader removed the bundle it unpacked.
    assert list(Path(env["TMPDIR"]).iterdir()) == []


SERVING = re.compile(r"worker (\d) of 2 serving \(pid (\d+)\)")


def test_the_binary_runs_workers_that_serve_reload_and_stop_together(
    installed: tuple[Path, dict[str, str]],
) -> None:
    """`serve --workers 2` from the one-file binary: the frozen interpreter forks its
    workers (no multiprocessing, no re-exec), both serve, one killed is replaced,
    SIGHUP replaces both, SIGTERM ends every process and the unpacked bundle goes."""
    binary, env = installed
    env = {**env, "PODSYNC_LOG_FORMAT": "json", "PODSYNC_LOG_ACCESS_LOG": "true"}
    server = Server([str(binary), "serve", "--workers", "2"], env, binary.parent)
    pids: dict[str, str] = {}
    try:
        for _ in range(2):
            found = server.wait_for(SERVING)
            pids[found.group(1)] = found.group(2)
        base = server.wait_for(LISTENING).group(1)
        for _ in range(60):  # a connection each: the kernel gives it to either worker
            assert call("GET", f"{base}/healthz")[0] == 200
        os.kill(int(pids["1"]), signal.SIGKILL)
        server.wait_for(re.compile(rf"worker 1 \(pid {pids['1']}\) was killed by signal 9"))
        replaced = server.wait_for(SERVING)
        assert replaced.group(1) == "1" and replaced.group(2) != pids["1"]
        server.proc.send_signal(signal.SIGHUP)
        server.wait_for(re.compile("reloaded the configuration"))
        assert call("GET", f"{base}/healthz")[0] == 200
    finally:
        code = server.stop()
    assert code == 0, "".join(server.log)
    server.wait_for(re.compile(r"\bstopped\b"), timeout=5)
    answered = {
        json.loads(line).get("worker")
        for line in server.log
        if line.startswith("{") and '"path": "/healthz"' in line
    }
    assert answered >= {0, 1}  # both workers served
    for pid in pids.values():
        assert not Path(f"/proc/{pid}").exists()
    assert list(Path(env["TMPDIR"]).iterdir()) == []
