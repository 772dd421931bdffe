"""A throwaway PostgreSQL cluster for the tests: one per test session, a fresh
database per test.

PostgreSQL refuses to run as root, and CI runs as root: then initdb and pg_ctl run
as the `postgres` user (`runuser -u postgres --`), in a temp dir it owns. The
server listens on a free loopback port and a socket in that dir, trusts local
connections and skips fsync (a test cluster is thrown away, so durability is not
what is tested). Without PostgreSQL the tests that need it skip with one line,
unless REQUIRE_POSTGRES_TESTS=1 (CI) makes that a failure.
"""

from __future__ import annotations

import asyncio
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import pytest

SKIP_REASON = (
    "PostgreSQL not installed: apt-get install postgresql (or set POSTGRES_TEST_BIN "
    "to its bin dir) to run the PostgreSQL tests; .ci/run always runs them"
)
RUNUSER_MISSING = (
    "runuser not found on PATH: as root the PostgreSQL tests run their server as the "
    "postgres user with it (Debian: /usr/sbin/runuser); add /usr/sbin to PATH to run them"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def find_bin() -> Path | None:
    """The directory holding initdb and pg_ctl, or None."""
    configured = os.environ.get("POSTGRES_TEST_BIN")
    # When set, only that dir counts (a wrong one skips the tests, as without PostgreSQL).
    candidates = [configured] if configured else glob.glob("/usr/lib/postgresql/*/bin")
    for directory in sorted(candidates, reverse=True):
        if (Path(directory) / "initdb").is_file() and (Path(directory) / "pg_ctl").is_file():
            return Path(directory)
    if configured:
        return None
    found = shutil.which("pg_ctl")
    return Path(found).parent if found and shutil.which("initdb") else None


def _as_owner(args: list[str]) -> list[str]:
    """Run as the postgres user when we are root (PostgreSQL refuses root)."""
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


class Cluster:
    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="podsync-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._names = itertools.count(1)
        self._options = ""

    def _tool(self, name: str) -> str:
        return str(self.bin_dir / name)

    def start(self, **settings: str | int) -> None:
        """initdb, start, and create the `podsync` database; `settings` are server
        settings (`max_connections=20`) on top of the test defaults."""
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        run = [str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres"]
        subprocess.run(
            _as_owner([*run, "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"]),
            check=True,
            capture_output=True,
        )
        chosen: dict[str, str | int] = {"max_connections": 200, **settings}
        self._options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off "
            + " ".join(f"-c {name}={value}" for name, value in chosen.items())
        )
        self.start_server()
        subprocess.run(
            _as_owner(
                [self._tool("createdb"), "-h", str(self.root), "-p", str(self.port), "podsync"]
            ),
            check=True,
            capture_output=True,
        )

    def start_server(self) -> None:
        """Start the server of an initialised cluster and wait until it takes connections."""
        log = str(self.root / "server.log")
        subprocess.run(
            _as_owner(
                [
                    self._tool("pg_ctl"),
                    "-D",
                    str(self.data),
                    "-o",
                    self._options,
                    "-w",
                    "-l",
                    log,
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
        )

    def stop_server(self, mode: str = "fast", wait: bool = True) -> None:
        """`pg_ctl stop -m mode`; without `wait`, return while it shuts down (a smart
        shutdown waits for its clients to leave, refusing new ones meanwhile). A server
        that has already stopped (a smart shutdown that ended meanwhile) is fine."""
        done = subprocess.run(
            _as_owner(
                [
                    self._tool("pg_ctl"),
                    "-D",
                    str(self.data),
                    "-m",
                    mode,
                    "-w" if wait else "-W",
                    "stop",
                ]
            ),
            capture_output=True,
        )
        if done.returncode != 0 and b"Is server running?" not in done.stderr:
            raise subprocess.CalledProcessError(
                done.returncode, done.args, done.stdout, done.stderr
            )

    def require_password(self, role: str) -> None:
        """Make `role` sign in with its password over TCP (the cluster trusts every
        other connection), and reload the server's rules."""
        hba = self.data / "pg_hba.conf"
        hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        self._run("SELECT pg_reload_conf()")

    def stop(self) -> None:
        subprocess.run(
            _as_owner([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def _run(self, statement: str, database: str = "postgres") -> None:
        """Run `statement` on `database`, on a thread of its own: callers may be
        inside a running event loop."""

        async def run() -> None:
            conn = await asyncpg.connect(self.url(database))
            try:
                await conn.execute(statement)
            finally:
                await conn.close()

        with ThreadPoolExecutor(1) as thread:
            thread.submit(asyncio.run, run()).result()

    @contextmanager
    def own_database(self) -> Iterator[str]:
        """A database of its own, as a URL, dropped afterwards: for a test that counts
        the rows its reads read. In the shared database another test's open snapshot
        keeps this test's dead row versions (its updates' old rows) unprunable, and
        an index scan then reads their entries too, as many as the other test's
        timing leaves; PostgreSQL keeps them for the snapshots of the same database
        only."""
        name = f"own{next(self._names)}"
        self._run(f"CREATE DATABASE {name}")
        try:
            yield self.url(name)
        finally:
            self._run(f"DROP DATABASE {name} WITH (FORCE)")

    def new_database(self) -> str:
        """A fresh empty schema of the cluster's one test database, as a URL whose
        search_path selects it (asyncpg passes unknown URL parameters to the server
        as settings). A schema costs milliseconds; a CREATE DATABASE copies files."""
        name = f"t{next(self._names)}"
        self._run(f"CREATE SCHEMA {name}", "podsync")
        return self.url("podsync") + f"?search_path={name}"


def start_cluster(**settings: str | int) -> Cluster:
    """Start a cluster, or skip (fail under REQUIRE_POSTGRES_TESTS=1) when missing."""
    bin_dir = find_bin()
    reason = None
    if bin_dir is None:
        reason = SKIP_REASON
    elif os.geteuid() == 0 and shutil.which("runuser") is None:
        # As root the server runs as the postgres user, through runuser (/usr/sbin).
        reason = RUNUSER_MISSING
    if reason is not None:
        if os.environ.get("REQUIRE_POSTGRES_TESTS") == "1":
            pytest.fail("REQUIRE_POSTGRES_TESTS=1 but " + reason)
        pytest.skip(reason)
    cluster = Cluster(bin_dir)
    try:
        cluster.start(**settings)
    except BaseException:
        cluster.stop()
        raise
    return cluster
