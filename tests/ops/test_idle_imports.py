"""An idle `podsync serve` leaves out what only some requests need (its memory is a
performance target, docs/performance.md): the web UI, Jinja2, the import from
another server, the other commands, the OPML module. They load with the first
request that needs them, and that request is answered as before."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.server_process import free_port, start_listening

# Modules a server answering only /healthz must not have imported (a prefix covers
# its submodules).
NOT_AT_IDLE = (
    "podsync.web.ui",
    "jinja2",
    "podsync.services.remote_import",
    "podsync.services.web_sessions",
    "podsync.cli.users",
    "podsync.cli.db",
    "podsync.cli.opml",
    "podsync.cli.configuration",
    "podsync.opml",
    "podsync.services.opml_io",
    "feedparser",
    "importlib.resources",
    "encodings.idna",
)
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$", re.MULTILINE)


def _serve(tmp_path: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """`python -X importtime -m podsync serve` on the defaults (the feed fetcher on),
    its own database; its log holds every module it imported, in order."""
    config = tmp_path / "podsync.toml"
    config.write_text(
        f'[server]\nhost = "127.0.0.1"\nport = {free_port()}\n\n'
        f'[database]\npath = "{tmp_path / "podsync.db"}"\n'
    )
    log = tmp_path / "serve.log"
    argv = [sys.executable, "-X", "importtime", "-m", "podsync", "--config", str(config), "serve"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc, base = start_listening(argv, log, env)
    return proc, base, log


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)


def _get(url: str, method: str = "GET") -> tuple[int, str, str]:
    request = urllib.request.Request(url, method=method)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            body = response.read()
            return response.status, response.headers["Content-Type"], body.decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode(errors="replace")


def _imported(log: Path) -> set[str]:
    return set(IMPORTED.findall(log.read_text(errors="replace")))


def _loaded(modules: set[str], prefix: str) -> bool:
    return any(m == prefix or m.startswith(prefix + ".") for m in modules)


def test_an_idle_server_imports_none_of_what_only_some_requests_need(tmp_path: Path) -> None:
    proc, base, log = _serve(tmp_path)
    try:
        assert _get(base + "/healthz")[0] == 200
    finally:
        _stop(proc)
    modules = _imported(log)
    assert "podsync.web.app" in modules  # the log is read right
    assert [m for m in NOT_AT_IDLE if _loaded(modules, m)] == []


def test_the_first_pages_load_the_web_ui_and_are_answered_as_before(tmp_path: Path) -> None:
    proc, base, log = _serve(tmp_path)
    try:
        # The very first request under /ui/ is a method the page does not allow: the
        # UI's error page, not the API's JSON.
        status, kind, body = _get(base + "/ui/login", method="PUT")
        assert (status, kind.split(";")[0]) == (405, "text/html")
        assert "<form" not in body and "</html>" in body

        # Several first pages at once share one load of the UI.
        async def pages() -> list[tuple[int, str, str]]:
            return list(
                await asyncio.gather(
                    *(asyncio.to_thread(_get, base + "/ui/login") for _ in range(6))
                )
            )

        for status, kind, body in asyncio.run(pages()):
            assert (status, kind.split(";")[0]) == (200, "text/html")
            assert 'name="password"' in body
        status, kind, _ = _get(base + "/favicon.ico")
        assert (status, kind) == (200, "image/vnd.microsoft.icon")
        # The API beside it is untouched.
        status, kind, _ = _get(base + "/api/v1/subscriptions")
        assert (status, kind.split(";")[0]) == (401, "application/json")
    finally:
        _stop(proc)
    assert _loaded(_imported(log), "podsync.web.ui")


@pytest.mark.parametrize("command", ["user", "db", "opml", "config"])
def test_every_command_group_is_listed_and_runs(command: str) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "podsync", "--help"], capture_output=True, text=True, check=True
    )
    assert re.search(rf"^\s+{command}\s", listed.stdout, re.MULTILINE)
    shown = subprocess.run(
        [sys.executable, "-m", "podsync", command, "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"Usage: podsync {command} [OPTIONS] COMMAND" in shown.stdout
