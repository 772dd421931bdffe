"""A real `podsync serve --workers N` tree for the tests: the parent and its workers
in a process group of their own (so a test can kill the whole tree), JSON log lines
read back with the worker each came from."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.server_process import SERVER_START_TIMEOUT, free_port

SERVING = re.compile(r"worker (\d+) of \d+ serving \(pid (\d+)\)")
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


def tree_config(
    directory: Path, port: int, server: str = "", extra: str = "", database: str = ""
) -> Path:
    """A config of a test server tree: its own database, JSON logs with the access
    log (each line names its worker), no outbound fetches unless `extra` says so.
    `server`: more lines of [server]; `database`: the lines of [database]."""
    path = directory / "server.toml"
    db = database or f'path = "{directory / "podsync.db"}"\ndurability = "full"'
    body = (
        f'[server]\nhost = "127.0.0.1"\nport = {port}\nshutdown_timeout = 5\n{server}\n'
        f"[database]\n{db}\n\n"
        '[log]\nlevel = "info"\naccess_log = true\nformat = "json"\n\n'
    )
    if "[feeds]" not in extra:
        body += "[feeds]\nfetch_metadata = false\n\n"
    path.write_text(body + extra)
    return path


class ServerTree:
    def __init__(
        self,
        directory: Path,
        workers: int = 2,
        server: str = "",
        extra: str = "",
        database: str = "",
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.workers = workers
        self.port = free_port()
        self.server, self.extra, self.database = server, extra, database
        self.config_path = tree_config(directory, self.port, server, extra, database)
        self.log_path = directory / "server.log"
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def rewrite_config(self, server: str) -> None:
        """The same config with other [server] lines (for a reload)."""
        tree_config(self.directory, self.port, server, self.extra, self.database)

    def cli(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        """A `podsync` command on the tree's config (`user add`, `db check`...)."""
        argv = [sys.executable, "-m", "podsync", "--config", str(self.config_path), *args]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
        return subprocess.run(
            argv, input=stdin, text=True, capture_output=True, env=env, timeout=60, check=False
        )

    def argv(self) -> list[str]:
        """`serve --workers N`; with N = 1, plain `serve` (the config file decides)."""
        argv = [sys.executable, "-m", "podsync", "--config", str(self.config_path), "serve"]
        return argv + (["--workers", str(self.workers)] if self.workers != 1 else [])

    def start(self) -> ServerTree:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # its own process group: kill_tree reaches all
            )
        started = len(self.lines_matching(LISTENING))
        self.wait_for(LISTENING, started + 1)
        return self

    def lines(self) -> list[dict[str, Any]]:
        found = []
        for raw in self.log_path.read_text(errors="replace").splitlines():
            try:
                found.append(json.loads(raw))
            except ValueError:
                found.append({"message": raw})
        return found

    def lines_matching(self, pattern: re.Pattern[str]) -> list[re.Match[str]]:
        return [m for line in self.lines() if (m := pattern.search(str(line.get("message"))))]

    def wait_for(
        self, pattern: re.Pattern[str], count: int = 1, timeout: float = SERVER_START_TIMEOUT
    ) -> list[re.Match[str]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.lines_matching(pattern)
            if len(found) >= count:
                return found
            if self.proc is not None and self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(
            f"no {count} lines matching {pattern.pattern!r}:\n{self.log_path.read_text()}"
        )

    def worker_pids(self) -> dict[int, int]:
        """The newest pid of each worker, from their start-up lines."""
        return {int(m.group(1)): int(m.group(2)) for m in self.lines_matching(SERVING)}

    def alive(self) -> list[int]:
        """The pids of the tree still running (the parent and its children)."""
        assert self.proc is not None
        found = []
        for pid in [self.proc.pid, *self.worker_pids().values()]:
            try:
                status = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            except FileNotFoundError:
                continue
            if status != "Z":
                found.append(pid)
        return found

    def kill_tree(self) -> None:
        """SIGKILL to the parent and every worker at once, as a power cut or the OOM
        killer of a container ends them: no shutdown code runs anywhere."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout: float = 20) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill_tree()
        return self.proc.returncode

    def __enter__(self) -> ServerTree:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill_tree()
