"""An idle `podsync serve` leaves out what only some requests need (its memory is a
performance target, docs/performance.md): the web UI, Jinja2, the import from
another server, the other commands, the OPML module, the gpodder-compatible APIs
(gpodder v2 and simple, Nextcloud, Login Flow v2) and the services only they use,
the heap report's debugging aid. They load with the first request that needs them,
and that request is answered as before."""

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
    # The gpodder-compatible APIs (web/routes.py: `_load_gpodder_apis`) and what only
    # they (and the web UI) use; the pruning reads the Nextcloud package's lifetimes.
    "podsync.web.gpodder.routes",
    "podsync.web.gpodder.handlers",
    "podsync.web.gpodder.http",
    "podsync.web.nextcloud",
    "podsync.services.gpodder",
    "podsync.services.nextcloud.sync",
    "podsync.services.nextcloud.login_flows",
    "podsync.services.episodes.writes",
    "podsync.services.devices",
    "podsync.services.device_subscriptions",
    "podsync.services.served",
    "podsync.serve.heap_report",
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


def _send(url: str, method: str = "GET") -> tuple[int, dict[str, str], str]:
    body = b"" if method == "POST" else None
    request = urllib.request.Request(url, method=method, data=body)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode(errors="replace")


def test_the_first_gpodder_and_nextcloud_requests_load_them_and_are_answered_as_before(
    tmp_path: Path,
) -> None:
    proc, base, log = _serve(tmp_path)
    try:
        # The very first is a path with repeated slashes (Kasts): routed as one, and
        # the gpodder layer's own Basic challenge, not the API's 404.
        status, headers, _ = _send(base + "//api/2/devices/alice.json")
        assert status == 401
        assert headers["WWW-Authenticate"].startswith('Basic realm="podsync"')
        assert headers["Cache-Control"] == "no-store"

        # Several first Login Flow v2 starts at once share the one load.
        async def starts() -> list[tuple[int, dict[str, str], str]]:
            return list(
                await asyncio.gather(
                    *(
                        asyncio.to_thread(_send, base + "/index.php/login/v2", "POST")
                        for _ in range(4)
                    )
                )
            )

        for status, _, body in asyncio.run(starts()):
            assert status == 200
            assert '"poll"' in body and "/index.php/login/v2/flow/" in body
        status, headers, _ = _send(base + "/subscriptions/alice.opml")
        assert (status, headers["WWW-Authenticate"][:6]) == (401, "Basic ")
        status, _, _ = _send(base + "/index.php/apps/gpoddersync/subscriptions", "PUT")
        assert status == 405
        # The Open Podcast API beside them is untouched.
        status, headers, _ = _send(base + "/api/v1/subscriptions")
        assert (status, headers["Content-Type"].split(";")[0]) == (401, "application/json")
    finally:
        _stop(proc)
    modules = _imported(log)
    assert _loaded(modules, "podsync.services.gpodder")
    assert _loaded(modules, "podsync.services.nextcloud.sync")
    assert not _loaded(modules, "podsync.web.ui")


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
