"""Shared fixtures: a real app on a real SQLite file in a temp dir.

`make_config(section={...})` builds a validated Config whose database lives in the
test's tmp_path; `client` runs create_app(config) under aiohttp's test client;
`create_user` and `login` go through the real services and the real API.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from click.testing import CliRunner, Result

from podsync.cli import cli
from podsync.config import Config, load_config
from podsync.services.accounts import AccountService
from podsync.services.passwords import HASH_THREADS, PasswordService
from podsync.storage.engine import create_engine
from podsync.storage.sqlite import Database
from podsync.web.app import create_app
from podsync.web.keys import USER
from tests.support.packaged_support import cannot_run
from tests.support.pg_cluster import Cluster, start_cluster
from tests.support.podman_sandbox import Sandbox, sandbox_beside_decoys

PASSWORD = "correct horse battery"

MakeConfig = Callable[..., Config]


ENGINES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Modules marked `both_engines` run each test on SQLite and on PostgreSQL."""
    if "db_engine" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "both_engines"
    ):
        metafunc.parametrize("db_engine", ENGINES, indirect=True)


# The tests of what packaging/ makes and configures: the one-file binary
# (executable), the container image and Compose (container), the arm64 binary and
# image under qemu (arm64), nginx and Caddy in front (proxy). They build for minutes,
# into build/ and dist/, emulate another CPU or need system packages, so they run
# only when asked: RUN_PACKAGING_TESTS=1 (.ci/run sets it). Every other test, whatever
# its file, runs by default. Each of them also gets the marker `packaging`.
PACKAGING_MARKERS = ("executable", "container", "arm64", "proxy")
RUN_PACKAGING = "RUN_PACKAGING_TESTS"
# The packaging tests left out, as (test id, file name): collected by this process,
# or, under pytest-xdist (`-n`), by each worker and sent to the controller, which
# prints the summary.
_NOT_SELECTED: dict[str, str] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    packaging = [
        item for item in items if any(item.get_closest_marker(m) for m in PACKAGING_MARKERS)
    ]
    for item in packaging:
        item.add_marker(pytest.mark.packaging)
    if not packaging or os.environ.get(RUN_PACKAGING) == "1":
        return
    chosen = set(packaging)
    items[:] = [item for item in items if item not in chosen]
    config.hook.pytest_deselected(items=packaging)
    _NOT_SELECTED.update((item.nodeid, item.path.name) for item in packaging)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """(A pytest-xdist worker) hand the tests left out to the controller."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["not_selected"] = dict(_NOT_SELECTED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """(The pytest-xdist controller) what a worker left out."""
    _NOT_SELECTED.update(getattr(node, "workeroutput", {}).get("not_selected", {}))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Where every tool is installed (.ci/run sets REQUIRE_ALL_TESTS=1 after installing
    them), a skipped test is a failure: a missing test dependency must not pass CI
    by skipping. Elsewhere a skip stays a skip, with its one-line reason."""
    outcome: Any = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("REQUIRE_ALL_TESTS") and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped, but REQUIRE_ALL_TESTS is set: {reason}"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say at the end which tests were not selected and how to run them. (Why a test
    skipped is in the short summary: `-rs` is in pytest's addopts.)"""
    if _NOT_SELECTED:
        files = sorted(set(_NOT_SELECTED.values()))
        terminalreporter.write_line(
            f"{len(_NOT_SELECTED)} tests of packaging/ not selected (the binaries, the "
            f"images and Compose, nginx and Caddy: {', '.join(files)}); {RUN_PACKAGING}=1 "
            "runs them too, as .ci/run does (docs/development.md)",
            yellow=True,
        )


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One PostgreSQL cluster for the session (skips when PostgreSQL is missing)."""
    cluster = start_cluster()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def podman_sandbox() -> Iterator[Sandbox]:
    """podman with a store of its own for the container tests (tests/support/podman_sandbox.py);
    the machine's store is checked to be as it was at the end."""
    if shutil.which("podman") is None:
        cannot_run("needs podman (apt-get install podman runc)")
    if os.geteuid() != 0:
        cannot_run("the container tests run podman as root")
    with sandbox_beside_decoys() as sandbox:
        yield sandbox


@pytest.fixture
def db_engine(request: pytest.FixtureRequest) -> str:
    """The engine of the test's database: "sqlite" unless parametrized."""
    engine: str = getattr(request, "param", "sqlite")
    return engine


@pytest.fixture
def database_url(db_engine: str, request: pytest.FixtureRequest) -> str:
    """A fresh PostgreSQL database for the test, or "" on SQLite."""
    if db_engine == "sqlite":
        return ""
    if request.node.get_closest_marker("counts_rows"):
        own: str = request.getfixturevalue("own_pg_database")
        return own
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    return cluster.new_database()


@pytest.fixture
def own_pg_database(pg_cluster: Cluster) -> Iterator[str]:
    """A PostgreSQL database of the test's own, dropped after it: for a test that
    counts the rows its reads read (Cluster.own_database says why)."""
    with pg_cluster.own_database() as url:
        yield url


@pytest.fixture
def make_config(tmp_path: Path, database_url: str) -> MakeConfig:
    def make(**sections: dict[str, Any]) -> Config:
        url = f'url = "{database_url}"\n' if database_url else ""
        lines = [f'[database]\npath = "{tmp_path / "podsync.db"}"\n{url}']
        if "feeds" not in sections:
            # The feeds of these tests are not served anywhere: no test reaches for a
            # public host. A test that serves its feeds passes `feeds` (on 127.0.0.1).
            sections = {**sections, "feeds": {"fetch_metadata": False}}
        # The cheapest cost the config allows, unless the test sets its own.
        sections = {**sections, "auth": {**TEST_HASH_COST, **sections.get("auth", {})}}
        for section, values in sections.items():
            body = "".join(f"{key} = {_toml(value)}\n" for key, value in values.items())
            if section == "database":
                lines[0] += body
            else:
                lines.append(f"[{section}]\n{body}")
        path = tmp_path / "podsync.toml"
        path.write_text("\n".join(lines))
        return load_config(path, environ={})

    return make


# argon2id's cheapest allowed cost (OWASP's minimum): a hash takes about a tenth of
# the default's CPU time, and the tests hash thousands of passwords. The tests of
# the default cost build their PasswordService without it.
TEST_MEMORY_KIB, TEST_TIME_COST = 7168, 5
TEST_HASH_COST = {
    "password_hash_memory_kib": TEST_MEMORY_KIB,
    "password_hash_time_cost": TEST_TIME_COST,
}


def cheap_passwords(threads: int = HASH_THREADS) -> PasswordService:
    """A PasswordService at the tests' cost, for a test that has no config at hand."""
    return PasswordService(threads, TEST_MEMORY_KIB, TEST_TIME_COST)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.fixture
def config(make_config: MakeConfig) -> Config:
    return make_config()


@pytest.fixture
async def client(aiohttp_client: Any, config: Config) -> TestClient[Any, Any]:
    result: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    return result


async def with_accounts(config: Config, action: Callable[[AccountService], Awaitable[Any]]) -> Any:
    """Run an account operation on the test database, as the CLI would."""
    db = create_engine(config.database)
    await db.open()
    passwords = PasswordService.for_config(config.auth)
    try:
        return await action(AccountService(db, passwords))
    finally:
        passwords.close()
        await db.close()


@pytest.fixture
def create_user(config: Config) -> Callable[..., Awaitable[Any]]:
    async def create(name: str = "alice", password: str = PASSWORD) -> Any:
        return await with_accounts(config, lambda accounts: accounts.add_user(name, password))

    return create


async def login(
    client: TestClient[Any, Any], name: str = "alice", password: str = PASSWORD
) -> dict[str, Any]:
    response = await client.post("/auth/login", json={"username": name, "password": password})
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    return body


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def alice(client: TestClient[Any, Any], create_user: Callable[..., Awaitable[Any]]) -> str:
    """An existing user `alice`, logged in: her access token."""
    await create_user("alice")
    token: str = (await login(client, "alice"))["access_token"]
    return token


# --- helpers shared by the foundation tests (auth, errors, logs, CLI, serve) ---

WHOAMI = "/api/test/whoami"  # test-only routes: protected like every /api path
BOOM = "/api/test/boom"


async def _whoami(request: web.Request) -> web.Response:
    return web.json_response({"name": request[USER].name})


async def _boom(request: web.Request) -> web.Response:
    raise RuntimeError("boom: forced by the test")


def app_with_test_routes(config: Config) -> web.Application:
    """create_app(config) plus GET /api/test/whoami and GET /api/test/boom."""
    app = create_app(config)
    app.router.add_get(WHOAMI, _whoami, allow_head=False)
    app.router.add_get(BOOM, _boom, allow_head=False)
    return app


SEEDED_USERS = ("alice", "bob", "carol")


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding SEEDED_USERS (password PASSWORD), hashed once per session."""
    path = tmp_path_factory.mktemp("seed") / "podsync.db"

    async def seed() -> None:
        async with Database(str(path)) as db:
            passwords = cheap_passwords()
            try:
                accounts = AccountService(db, passwords)
                for name in SEEDED_USERS:
                    await accounts.add_user(name, PASSWORD)
            finally:
                passwords.close()

    asyncio.run(seed())
    return path


@pytest.fixture
def seeded_users(config: Config, seeded_template: Path) -> tuple[str, ...]:
    """alice, bob and carol (password PASSWORD) exist in the test's database file.
    Request it before anything that opens the database."""
    if config.database.url:  # PostgreSQL: no file to copy; hash them for this test

        async def seed(accounts: AccountService) -> None:
            for name in SEEDED_USERS:
                await accounts.add_user(name, PASSWORD)

        asyncio.run(with_accounts(config, seed))
        return SEEDED_USERS
    shutil.copyfile(seeded_template, config.database.path)
    return SEEDED_USERS


@pytest.fixture
async def api(
    aiohttp_client: Any, config: Config, seeded_users: tuple[str, ...]
) -> TestClient[Any, Any]:
    """Like `client`, with the seeded users and the test-only WHOAMI and BOOM routes."""
    result: TestClient[Any, Any] = await aiohttp_client(app_with_test_routes(config))
    return result


async def raw_http(port: int, data: bytes) -> bytes:
    """Send raw bytes to 127.0.0.1:port and read the answer until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 5.0)
    finally:
        writer.close()


def run_cli(config: Config | None, *args: str, input: str | None = None) -> Result:
    """The real CLI under CliRunner, on the config's file when one is given."""
    options = ["--config", str(config_file(config))] if config is not None else []
    return CliRunner().invoke(cli, [*options, *args], input=input, catch_exceptions=False)


def config_file(config: Config) -> Path:
    """The TOML file make_config wrote (beside the database)."""
    return Path(config.database.path).parent / "podsync.toml"


LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:(\d+))")


class ServeProcess:
    """`python -m podsync serve` in a subprocess; stderr goes to a file we can read."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.log_path = cwd / f"serve-{time.monotonic_ns()}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "podsync", *args],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.url = self._wait_for_listening()

    def _wait_for_listening(self) -> str:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            match = LISTENING.search(self.output())
            if match:
                return match.group(1)
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"serve did not start:\n{self.output()}")

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._log.close()
        return code


@pytest.fixture
def serve_process(tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    """Start `podsync [--config FILE] serve --port 0`; every process is stopped at the end."""
    started: list[ServeProcess] = []

    def start(config: Config | None = None, env: dict[str, str] | None = None) -> ServeProcess:
        options = ["--config", str(config_file(config))] if config is not None else []
        process = ServeProcess([*options, "serve", "--port", "0"], tmp_path, env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
async def gp(
    aiohttp_client: Any, config: Config, seeded_users: tuple[str, ...]
) -> TestClient[Any, Any]:
    """The app with the seeded users, through a client that keeps no cookies: each
    gpodder test sends exactly the credentials and cookies it means to."""
    from aiohttp import DummyCookieJar

    result: TestClient[Any, Any] = await aiohttp_client(
        create_app(config), cookie_jar=DummyCookieJar()
    )
    return result


@pytest.fixture
def gp_with(
    aiohttp_client: Any, make_config: MakeConfig, seeded_template: Path
) -> Callable[..., Awaitable[TestClient[Any, Any]]]:
    """`gp` on a config with some keys changed: `await gp_with(gpodder={...})`."""
    from aiohttp import DummyCookieJar

    async def make(**sections: dict[str, Any]) -> TestClient[Any, Any]:
        config = make_config(**sections)
        if config.database.url:  # PostgreSQL (a both_engines module): hash them here

            async def seed(accounts: AccountService) -> None:
                for name in SEEDED_USERS:
                    await accounts.add_user(name, PASSWORD)

            await with_accounts(config, seed)
        else:
            shutil.copyfile(seeded_template, config.database.path)
        result: TestClient[Any, Any] = await aiohttp_client(
            create_app(config), cookie_jar=DummyCookieJar()
        )
        return result

    return make
