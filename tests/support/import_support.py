"""Driving an import from another server as a person and an admin do: the web UI's
form through a real `podsync serve` (a browser-like client with a cookie jar), and
the real CLI in a process of its own, with its peak memory measured."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from podsync.config import Config
from tests.conftest import PASSWORD
from tests.support.remote_peers import REMOTE_PASSWORD
from tests.support.server_support import podsync_command

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
RUNNING = re.compile(r"Import (running|stopping)")
IMPORT_ID = re.compile(r"/ui/transfer\?import=(\d+)")


class Browser:
    """A form-posting HTTP client with a cookie jar, as a browser signs in."""

    def __init__(self, base: str, name: str = "alice") -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()), _NoRedirect()
        )
        status, _ = self.post("/ui/login", {"username": name, "password": PASSWORD}, csrf=False)
        assert status == 303, status

    def get(self, path: str) -> tuple[int, str]:
        return self._open(urllib.request.Request(self.base + path))  # noqa: S310

    def post(self, path: str, form: dict[str, str], csrf: bool = True) -> tuple[int, str]:
        """(status, body); a redirect's body is its Location."""
        if csrf:
            found = CSRF.search(self.get("/ui/transfer")[1])
            assert found is not None
            form = {"csrf": found.group(1), **form}
        data = urllib.parse.urlencode(form).encode()
        headers = {"Origin": self.base}
        return self._open(urllib.request.Request(self.base + path, data, headers))  # noqa: S310

    def _open(self, req: urllib.request.Request) -> tuple[int, str]:
        try:
            with self.opener.open(req, timeout=600) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            with exc:
                if exc.code in (301, 302, 303):
                    return exc.code, exc.headers.get("Location", "")
                return exc.code, exc.read().decode()

    def start_import(self, remote_base: str, password: str = REMOTE_PASSWORD) -> tuple[int, str]:
        form = {"url": remote_base, "username": "remote", "password": password, "api": ""}
        return self.post("/ui/import-from", form)

    def finished(self, location: str, within_s: float = 120) -> str:
        """The page at `location` once the import it shows has ended."""
        deadline = time.monotonic() + within_s
        while True:
            status, text = self.get(location)
            assert status == 200, (status, text)
            if not RUNNING.search(text):
                return text
            assert time.monotonic() < deadline, "the import did not end"
            time.sleep(0.1)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_args: object, **_kwargs: object) -> None:
        return None


def import_id(location: str) -> str:
    found = IMPORT_ID.search(location)
    assert found is not None, location
    return found.group(1)


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def memory_mib(pid: int) -> tuple[float, float]:
    """(resident now, peak resident) of a process, 0 once it ended. The peak is its
    own since its exec (VmHWM): the kernel's rusage counts what the process forked
    from held too."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0, 0.0
    found = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    rss, hwm = found.get("VmRSS", "0 kB"), found.get("VmHWM", "0 kB")
    return int(rss.split()[0]) / 1024, int(hwm.split()[0]) / 1024


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_mib: float  # its VmHWM, as last seen (sampled every 20 ms)
    seconds: float
    killed: str | None  # why the watcher killed it (memory or time), or None


def import_in_process(
    config: Config,
    remote_base: str,
    *extra: str,
    kill_above_mib: float = 1024,
    timeout_s: float = 300,
) -> CliRun:
    """`podsync user import-from alice REMOTE --username remote` in a process of its
    own, its peak memory watched; killed past `kill_above_mib` or `timeout_s`, so
    that a regression fails the test instead of taking the machine."""
    argv = podsync_command(config, "user", "import-from", "alice", remote_base)
    argv += ["--username", "remote", *extra]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
    env["PODSYNC_IMPORT_PASSWORD"] = REMOTE_PASSWORD
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        killed: list[str] = []
        peak = [0.0]
        ended = threading.Event()
        started = time.monotonic()

        def watch() -> None:  # never waits for the child: waitpid below reaps it
            while not ended.wait(0.02):
                rss, hwm = memory_mib(proc.pid)
                peak[0] = max(peak[0], hwm)
                if rss > kill_above_mib:
                    killed.append(f"more than {kill_above_mib} MiB")
                    os.kill(proc.pid, signal.SIGKILL)
                elif time.monotonic() - started > timeout_s:
                    killed.append(f"more than {timeout_s} s")
                    os.kill(proc.pid, signal.SIGKILL)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        _pid, status = os.waitpid(proc.pid, 0)
        ended.set()
        watcher.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return CliRun(
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            peak[0],
            time.monotonic() - started,
            killed[0] if killed else None,
        )
