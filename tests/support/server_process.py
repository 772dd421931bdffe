"""A real `python -m podsync serve` in a subprocess, on a free loopback port.

For the tests that need a separate process: killing it mid-write, or driving it
from a synchronous HTTP client (schemathesis).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from podsync.config import Config, load_config
from tests.conftest import TEST_HASH_COST

SERVER_START_TIMEOUT = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_server_config(directory: Path, port: int, **auth: int) -> Config:
    """Config of a test server: its own DB in `directory`, durability full, quiet."""
    auth = {**TEST_HASH_COST, **auth}  # the cheapest cost, unless the test sets its own
    extra = "".join(f"{key} = {value}\n" for key, value in auth.items())
    path = directory / "server.toml"
    path.write_text(
        f'[server]\nhost = "127.0.0.1"\nport = {port}\n\n'
        f'[database]\npath = "{directory / "podsync.db"}"\ndurability = "full"\n\n'
        f"[auth]\n{extra}\n"
        '[log]\nlevel = "warning"\naccess_log = false\n\n'
        # Its feeds are not served here: nothing reaches for a public host.
        "[feeds]\nfetch_metadata = false\n"
    )
    return load_config(path, environ={})


class ServerProcess:
    def __init__(self, config_path: Path, port: int, log_path: Path) -> None:
        self.config_path = config_path
        self.base_url = f"http://127.0.0.1:{port}"
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
        argv = [sys.executable, "-m", "podsync", "--config", str(self.config_path), "serve"]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited at start:\n{self.log_path.read_text()}")
            url = self.base_url + "/healthz"
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1):  # noqa: S310
                return
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"server did not answer in {SERVER_START_TIMEOUT} s")

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a crash or an OOM kill."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


def start_listening(
    argv: list[str], log: Path, env: dict[str, str], cwd: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a `serve` command line (any interpreter options) with its output in
    `log`; return it and its URL once its start-up line names the port."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        match = LISTENING.search(log.read_text(errors="replace"))
        if match:
            return proc, match.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise AssertionError(f"serve did not start:\n{log.read_text(errors='replace')}")
