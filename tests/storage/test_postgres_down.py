"""PostgreSQL down, shutting down, restarting or out of connections (contract section
14): every route that needs the database answers 503 with Retry-After and a
description saying which, never 500, and podsync recovers by itself once the
database is back. The test owns its cluster and stops and starts it with pg_ctl,
also while requests run."""

from __future__ import annotations

import asyncio
import http.client
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import asyncpg
import pytest

from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig
from tests.support.cli_support import add_user
from tests.support.gpodder_support import basic
from tests.support.http_calls import Answer, call
from tests.support.pg_cluster import Cluster, start_cluster
from tests.support.route_table import live_routes, not_covered
from tests.support.server_process import free_port
from tests.support.server_support import podsync_command, serving
from tests.support.sync_helpers import action

MAX_CONNECTIONS = 20
NEXTCLOUD = "/index.php/apps/gpoddersync"
# Routes that never touch the database: they go on answering 200.
# Login Flow v2's browser address redirects to the web UI's sign-in page (urllib
# follows it), which needs no database either.
FLOW_PAGE = "/index.php/login/v2/flow/f"
NO_DATABASE = {"/", "/api/v1/openapi.json", FLOW_PAGE}
Route = tuple[str, str, Any, dict[str, str]]


@pytest.fixture
def own_cluster() -> Iterator[Cluster]:
    """A cluster of this test alone: it is stopped and started under load."""
    cluster = start_cluster(max_connections=MAX_CONNECTIONS)
    yield cluster
    cluster.stop()


def _routes(token: str, refresh: str, sync_id: str) -> list[Route]:
    """One request for every route of the route table (checked below)."""
    bearer = {"Authorization": f"Bearer {token}"}
    gp = basic()
    episode = {"podcast": "https://e.example/rss", "episode": "https://e.example/1.mp3",
               "action": "download"}  # fmt: skip
    feeds = b"https://l.example/rss\n"
    form = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
    return [
        ("GET", "/", None, {}),
        ("GET", "/healthz", None, {}),
        ("GET", "/metrics", None, {}),
        ("GET", "/api/v1/openapi.json", None, {}),
        ("POST", "/auth/login", {"username": "alice", "password": PASSWORD}, {}),
        ("POST", "/auth/refresh", {"refresh_token": refresh}, {}),
        ("GET", "/api/v1/subscriptions", None, bearer),
        ("GET", "/api/v1/subscriptions.opml", None, bearer),
        ("GET", f"/api/v1/subscriptions/{sync_id}", None, bearer),
        ("POST", "/api/v1/sync", {"requests": [action(feed_url="https://s.example/rss")]}, bearer),
        ("GET", "/api/v1/sync", None, bearer),
        ("POST", "/api/2/auth/alice/login.json", None, gp),
        ("POST", "/api/2/auth/alice/logout.json", None, gp),
        ("GET", "/api/2/devices/alice.json", None, gp),
        ("POST", "/api/2/devices/alice/phone.json", {"caption": "Phone"}, gp),
        ("GET", "/api/2/subscriptions/alice/phone.json?since=0", None, gp),
        ("POST", "/api/2/subscriptions/alice/phone.json", {"add": ["https://g.example/rss"]}, gp),
        ("GET", "/api/2/episodes/alice.json?since=0", None, gp),
        ("POST", "/api/2/episodes/alice.json", [episode], gp),
        ("GET", "/api/2/sync-devices/alice.json", None, gp),
        ("POST", "/api/2/sync-devices/alice.json", {"synchronize": []}, gp),
        ("GET", "/subscriptions/alice.opml", None, gp),
        ("GET", "/subscriptions/alice/phone.txt", None, gp),
        ("PUT", "/subscriptions/alice/phone.txt", feeds, gp),
        ("POST", "/subscriptions/alice/phone.txt", feeds, gp),
        ("GET", f"{NEXTCLOUD}/subscriptions?since=0", None, gp),
        ("POST", f"{NEXTCLOUD}/subscription_change/create", {"add": [], "remove": []}, gp),
        ("GET", f"{NEXTCLOUD}/episode_action?since=0", None, gp),
        ("POST", f"{NEXTCLOUD}/episode_action/create", [episode], gp),
        ("POST", "/index.php/login/v2", None, {}),
        ("POST", "/index.php/login/v2/poll", b"token=x", form),
        ("GET", FLOW_PAGE, None, {}),
    ]


def _covers_every_route(routes: list[Route], make_config: MakeConfig) -> None:
    app = create_app(make_config(server={"metrics": True}))
    served = {
        (method, pattern)
        for method, pattern in live_routes(app)
        # The web UI's pages answer people, with a page rather than the error shape:
        # they are not part of this API-level check. The browser's tab icon is a
        # constant that needs no database.
        if not (pattern + "/").startswith("/ui/") and pattern != "/favicon.ico"
    }
    assert not_covered(served, [(m, p) for m, p, _, _ in routes]) == []


def _send(base: str, route: Route) -> Answer:
    method, path, body, headers = route
    return call(method, base + path, body, headers, timeout=30)


def _assert_unavailable(answer: Answer, route: Route, *reasons: str) -> None:
    assert answer.status == 503, (route[:2], answer.status, answer.body)
    assert int(answer.headers["Retry-After"]) >= 1, route[:2]
    assert any(reason in answer.description for reason in reasons), (route[:2], answer.description)


def _all_down(base: str, routes: list[Route], *reasons: str) -> None:
    for route in routes:
        answer = _send(base, route)
        if route[1] in NO_DATABASE:
            assert answer.status == 200, (route[:2], answer.body)
        elif route[1] == "/healthz":
            assert answer.status == 503
        else:
            _assert_unavailable(answer, route, *reasons)


def _recovered(base: str, routes: list[Route]) -> dict[tuple[str, str], int]:
    """Wait until podsync answers again; each route's answer once it has: its status
    with a connection (200 for most, 404 for the poll of an unknown Login Flow)."""
    deadline = time.monotonic() + 30
    while call("GET", base + "/healthz").status != 200:
        assert time.monotonic() < deadline, "podsync did not recover"
        time.sleep(0.2)
    statuses: dict[tuple[str, str], int] = {}
    for route in routes:
        answer = _send(base, route)
        assert answer.status < 500, (route[:2], answer.status, answer.body)
        statuses[route[:2]] = answer.status
    return statuses


def _ui_call(base: str, method: str, path: str, cookie: str, form: bytes | None = None) -> Answer:
    headers = {"Cookie": f"podsync_ui={cookie}"} if cookie else {}
    if form is not None:
        headers |= {"Content-Type": "application/x-www-form-urlencoded", "Origin": base}
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        conn.request(method, path, form, headers)
        response = conn.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        conn.close()


def _ui_sign_in(base: str) -> str:
    """A web UI session of alice: its cookie."""
    form = urlencode({"username": "alice", "password": PASSWORD}).encode()
    answer = _ui_call(base, "POST", "/ui/login", "", form)
    assert answer.status == 303, answer.body
    cookie = SimpleCookie(answer.headers["Set-Cookie"])
    return cookie["podsync_ui"].value


def _ui_down(base: str, cookie: str, reason: bytes = b"refused the connection") -> None:
    """The web UI while the database is down: a page for a person saying so (503 with
    Retry-After), never a 500; the sign-in form itself needs no database."""
    assert _ui_call(base, "GET", "/ui/login", "").status == 200
    form = urlencode({"username": "alice", "password": PASSWORD}).encode()
    pages = ["/ui/", "/ui/subscriptions", "/ui/history", "/ui/devices", "/ui/transfer",
             "/ui/account", "/ui/export.opml", "/ui/admin/users"]  # fmt: skip
    sent = [("GET", page, cookie, None) for page in pages] + [
        ("POST", "/ui/login", "", form),
        ("POST", "/ui/subscriptions", cookie, b"url=https%3A%2F%2Fx.example%2Frss&csrf=x"),
    ]
    for method, path, with_cookie, body in sent:
        answer = _ui_call(base, method, path, with_cookie, body)
        assert answer.status == 503, (method, path, answer.status, answer.body[:300])
        assert int(answer.headers.get("Retry-After", 0)) >= 1, (method, path)
        assert answer.headers["Content-Type"].startswith("text/html"), (method, path)
        assert reason in answer.body, (method, path, answer.body[:300])


def _hammer(base: str, routes: list[Route], stop: threading.Event, seen: list[Answer]) -> None:
    while not stop.is_set():
        for route in routes:
            try:
                answer = _send(base, route)
            except http.client.HTTPException as exc:
                raise AssertionError(f"{route[:2]}: {exc!r}") from exc
            seen.append(answer)
            assert answer.status < 500 or answer.status == 503, (route[:2], answer.body)
            if answer.status == 503:
                assert int(answer.headers["Retry-After"]) >= 1
                assert "failed unexpectedly" not in answer.description


def _flow_throttled(route: Route, answer: Answer) -> bool:
    """A Login Flow start refused by its per-address bound: the bound is counted in
    the database, so this answer, like a 200, came with a connection. The test
    starts a flow from 127.0.0.1 with every pass over the routes (the hammering
    above makes tens of passes on a fast machine), past the bound of 20 in 20 minutes."""
    return (
        route[:2] == ("POST", "/index.php/login/v2")
        and answer.status == 429
        and "too many sign-in requests from this address" in answer.description
    )


def _out_of_connections(
    base: str, routes: list[Route], healthy: dict[tuple[str, str], int]
) -> None:
    """Requests at once need more connections than podsync's pool holds (its floor
    connection may be back already): those it cannot open are 503s that say so; the
    others got a connection and answer as they do when the server is healthy."""
    needing = [r for r in routes if r[1] not in NO_DATABASE] * 2
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda route: _send(base, route), needing))
    for route, answer in zip(needing, answers, strict=True):
        with_connection = answer.status in (200, healthy[route[:2]])
        if with_connection or route[1] == "/healthz" or _flow_throttled(route, answer):
            continue  # answered with one of the pool's connections
        _assert_unavailable(answer, route, "too many connections")
    assert any("too many connections" in a.description for a in answers if a.status == 503)


async def _fill_connections(url: str) -> list[asyncpg.Connection]:
    """Take every connection slot the server has, ending podsync's own first (a
    pooled connection that outlived the restart would answer the requests)."""
    held: list[asyncpg.Connection] = [await asyncpg.connect(url)]
    await held[0].execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
    )
    for _ in range(MAX_CONNECTIONS * 2):
        try:
            held.append(await asyncpg.connect(url))
        except asyncpg.TooManyConnectionsError:
            return held
    raise AssertionError("the server never ran out of connections")


async def _only_holder_left(url: str, holder: asyncpg.Connection) -> None:
    """Once the smart shutdown refuses new connections, end every session but the
    holder's: a pooled connection podsync made after the restart (its pool refills in
    the background) would otherwise go on answering through the shutdown."""
    deadline = time.monotonic() + 30
    while True:
        try:
            probe = await asyncpg.connect(url)
        except asyncpg.CannotConnectNowError:
            break
        await probe.close()
        assert time.monotonic() < deadline, "the smart shutdown never refused connections"
        await asyncio.sleep(0.05)
    await holder.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
    )


def _flushed(base: str) -> None:
    """Wait until /healthz answers 503: a pooled connection ended a moment ago may be
    found lost by the first request (a 503 of its own words) rather than refused."""
    deadline = time.monotonic() + 30
    while call("GET", base + "/healthz").status != 503:
        assert time.monotonic() < deadline, "podsync went on answering through the shutdown"
        time.sleep(0.1)


def test_every_route_answers_503_while_postgresql_is_down_and_recovers(
    make_config: MakeConfig, own_cluster: Cluster, tmp_path: Path
) -> None:
    url = own_cluster.url("podsync")
    config = make_config(database={"url": url}, server={"metrics": True})
    add_user(config)
    with serving(config, tmp_path / "serve.log") as base:
        login = call("POST", f"{base}/auth/login", {"username": "alice", "password": PASSWORD})
        page_cookie = _ui_sign_in(base)
        token, refresh = login.json()["access_token"], login.json()["refresh_token"]
        sub = {"requests": [action(feed_url="https://one.example/rss")]}
        posted = call("POST", f"{base}/api/v1/sync", sub, {"Authorization": f"Bearer {token}"})
        sync_id = posted.json()["results"][0]["data"]["sync_id"]
        routes = _routes(token, refresh, sync_id)
        _covers_every_route(routes, make_config)
        _recovered(base, routes)

        # Stopped and started while requests run: 200 or 503, never 500.
        stop = threading.Event()
        seen: list[Answer] = []
        errors: list[BaseException] = []

        def hammer() -> None:
            try:
                _hammer(base, routes, stop, seen)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        own_cluster.stop_server("fast")
        time.sleep(1.0)
        own_cluster.start_server()
        time.sleep(1.0)
        stop.set()
        for thread in threads:
            thread.join(60)
        log = (tmp_path / "serve.log").read_text()
        assert not errors, f"{errors[0]}\n{log[log.find('unhandled error') :][:8000]}"
        assert any(a.status == 503 for a in seen) and any(a.status == 200 for a in seen)
        said = Counter(re.sub(r"\d+", "N", a.description) for a in seen if a.status == 503)
        print("503s while stopped and started:", dict(said))  # a figure, shown with -s
        _recovered(base, routes)

        # Down: the connection is refused.
        own_cluster.stop_server("fast")
        _all_down(base, routes, "refused", "not running", "cannot connect")
        _ui_down(base, page_cookie)
        own_cluster.start_server()
        _recovered(base, routes)
        assert _ui_call(base, "GET", "/ui/subscriptions", page_cookie).status == 200

        # Shutting down: a smart shutdown waits for a client and refuses new ones.
        own_cluster.stop_server("fast")
        own_cluster.start_server()
        loop = asyncio.new_event_loop()
        try:
            holder = loop.run_until_complete(asyncpg.connect(url))
            own_cluster.stop_server("smart", wait=False)
            loop.run_until_complete(_only_holder_left(url, holder))
            _flushed(base)
            _all_down(base, routes, "shutting down")
            loop.run_until_complete(holder.close())
            own_cluster.stop_server("fast")  # waits for the end of the smart shutdown
            own_cluster.start_server()
            healthy = _recovered(base, routes)

            # Out of connections: every slot is taken by others.
            own_cluster.stop_server("fast")
            own_cluster.start_server()
            held = loop.run_until_complete(_fill_connections(url))
            try:
                _out_of_connections(base, routes, healthy)
            finally:
                for conn in held:
                    loop.run_until_complete(conn.close())
            _recovered(base, routes)
        finally:
            loop.close()
        assert "unhandled error" not in (tmp_path / "serve.log").read_text()


def test_serve_waits_for_a_postgresql_server_that_starts_after_it(
    make_config: MakeConfig, own_cluster: Cluster, tmp_path: Path
) -> None:
    """podsync and PostgreSQL started together (a compose file, a boot): serve keeps
    trying the server that is not up yet, a WARNING naming the database each time,
    and serves once it is."""
    url = own_cluster.url("podsync")
    config = make_config(database={"url": url, "start_wait": 60})
    add_user(config)
    own_cluster.stop_server("fast")
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            podsync_command(config, "serve", "--port", str(port)), stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 30
        while "trying again" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        own_cluster.start_server()
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if call("GET", f"http://127.0.0.1:{port}/healthz", timeout=5).status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    finally:
        process.terminate()
        process.wait(timeout=30)
    said = log.read_text()
    assert re.search(r"WARNING .*database PostgreSQL database podsync on 127\.0\.0\.1:\d+: "
                     r"the database server refused the connection", said), said  # fmt: skip
    assert "secret" not in said and "unhandled" not in said


def test_serve_that_cannot_reach_postgresql_names_the_database_and_the_reason(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    closed = free_port()  # nothing listens there
    url = f"postgresql://podsync:s3cret-pw@127.0.0.1:{closed}/podsync"
    config = make_config(database={"url": url, "start_wait": 0})
    done = subprocess.run(
        podsync_command(config, "serve", "--port", str(free_port())),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"Error: database PostgreSQL database podsync on 127.0.0.1:{closed}: "
        "the database server refused the connection (is it running?)"
    )
    assert "s3cret" not in done.stderr + done.stdout


# Everyone connected to a database but the session that asks.
TERMINATE = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
    "WHERE datname = $1 AND pid <> pg_backend_pid()"
)


def _admin(url: str, *statements: str | tuple[str, str]) -> None:
    """Run statements (or (statement, argument)) as the cluster's superuser."""

    async def run() -> None:
        conn = await asyncpg.connect(url)
        try:
            for statement in statements:
                if isinstance(statement, tuple):
                    await conn.execute(*statement)
                else:
                    await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run())


def test_any_failure_to_get_a_connection_is_a_503_on_every_route_and_recovers(
    make_config: MakeConfig, own_cluster: Cluster, tmp_path: Path
) -> None:
    """Not only a server that is down: a database that takes no connections
    (ALLOW_CONNECTIONS false, SQLSTATE 55000), sessions an administrator ends
    (57P01) while requests run, and a password rotated under podsync (28P01) are
    each a 503 with Retry-After and the server's words on every route, never a 500,
    and podsync recovers by itself once connections are possible again."""
    admin = own_cluster.url("postgres")
    _admin(admin, "CREATE ROLE rotating LOGIN PASSWORD 'first-pw'",
           "CREATE DATABASE rotated OWNER rotating")  # fmt: skip
    own_cluster.require_password("rotating")
    url = f"postgresql://rotating:first-pw@127.0.0.1:{own_cluster.port}/rotated"
    config = make_config(database={"url": url}, server={"metrics": True})
    add_user(config)
    log = tmp_path / "serve.log"
    with serving(config, log) as base:
        login = call("POST", f"{base}/auth/login", {"username": "alice", "password": PASSWORD})
        page_cookie = _ui_sign_in(base)
        token, refresh = login.json()["access_token"], login.json()["refresh_token"]
        sub = {"requests": [action(feed_url="https://one.example/rss")]}
        posted = call("POST", f"{base}/api/v1/sync", sub, {"Authorization": f"Bearer {token}"})
        sync_id = posted.json()["results"][0]["data"]["sync_id"]
        routes = _routes(token, refresh, sync_id)
        _covers_every_route(routes, make_config)
        _recovered(base, routes)

        # Sessions ended while requests run (57P01 to a query in flight, a lost
        # connection to the next), and the database closed to new ones (55000).
        stop = threading.Event()
        seen: list[Answer] = []
        errors: list[BaseException] = []

        def hammer() -> None:
            try:
                _hammer(base, routes, stop, seen)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for thread in threads:
            thread.start()
        for _ in range(10):
            time.sleep(0.2)
            _admin(admin, (TERMINATE, "rotated"))
        _admin(admin, "ALTER DATABASE rotated ALLOW_CONNECTIONS false", (TERMINATE, "rotated"))
        time.sleep(1.0)
        stop.set()
        for thread in threads:
            thread.join(60)
        said = log.read_text()
        assert not errors, f"{errors[0]}\n{said[said.find('unhandled error') :][:8000]}"
        assert any(a.status == 503 for a in seen) and any(a.status == 200 for a in seen)
        _flushed(base)
        closed = "is not currently accepting connections"
        _all_down(base, routes, f'database "rotated" {closed}')
        _ui_down(base, page_cookie, closed.encode())
        _admin(admin, "ALTER DATABASE rotated ALLOW_CONNECTIONS true")
        _recovered(base, routes)

        # The password rotated under a running podsync (28P01), then set back.
        _admin(admin, "ALTER ROLE rotating PASSWORD 'second-pw'", (TERMINATE, "rotated"))
        _flushed(base)
        rotated = 'password authentication failed for user "rotating"'
        _all_down(base, routes, rotated)
        _ui_down(base, page_cookie, b"password authentication failed")
        _admin(admin, "ALTER ROLE rotating PASSWORD 'first-pw'")
        _recovered(base, routes)
        assert _ui_call(base, "GET", "/ui/subscriptions", page_cookie).status == 200
    said = log.read_text()
    assert "unhandled error" not in said and "Traceback" not in said, said[-8000:]
    assert "first-pw" not in said and "second-pw" not in said


def _certificate(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, as PostgreSQL reads them
    (the key the server's user's alone)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    key.chmod(0o600)
    if os.geteuid() == 0:
        for path in (cert, key):
            shutil.chown(path, "postgres", "postgres")
    return cert, key


def test_a_tls_handshake_that_fails_is_a_503_on_every_route_and_recovers(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    """podsync checks the server's certificate (sslmode=verify-full); the server's
    certificate is replaced by one its CA did not sign: new connections fail in the
    TLS handshake, a 503 on every route; the right certificate back, podsync
    recovers by itself."""
    certs = Path(tempfile.mkdtemp(prefix="podsync-pg-tls-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(certs, "postgres", "postgres")
        cert, key = _certificate(certs, "server")
        other_cert, other_key = _certificate(certs, "other")
        good = (cert.read_bytes(), key.read_bytes())
        cluster = start_cluster(ssl="on", ssl_cert_file=str(cert), ssl_key_file=str(key))
        try:
            _tls_round(cluster, make_config, tmp_path, (cert, key), good,
                       (other_cert.read_bytes(), other_key.read_bytes()))  # fmt: skip
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(certs, ignore_errors=True)


def _tls_round(
    cluster: Cluster,
    make_config: MakeConfig,
    tmp_path: Path,
    files: tuple[Path, Path],
    good: tuple[bytes, bytes],
    other: tuple[bytes, bytes],
) -> None:
    root = tmp_path / "ca.crt"
    root.write_bytes(good[0])
    url = f"{cluster.url('podsync')}?sslmode=verify-full&sslrootcert={root}"
    config = make_config(database={"url": url}, server={"metrics": True})
    add_user(config)
    log = tmp_path / "serve.log"

    def serve_certificate(pair: tuple[bytes, bytes]) -> None:
        for path, content in zip(files, pair, strict=True):
            path.write_bytes(content)  # in place: owner and mode stay
        _admin(cluster.url(), "SELECT pg_reload_conf()", (TERMINATE, "podsync"))

    with serving(config, log) as base:
        login = call("POST", f"{base}/auth/login", {"username": "alice", "password": PASSWORD})
        page_cookie = _ui_sign_in(base)
        token, refresh = login.json()["access_token"], login.json()["refresh_token"]
        sub = {"requests": [action(feed_url="https://one.example/rss")]}
        posted = call("POST", f"{base}/api/v1/sync", sub, {"Authorization": f"Bearer {token}"})
        sync_id = posted.json()["results"][0]["data"]["sync_id"]
        routes = _routes(token, refresh, sync_id)
        _recovered(base, routes)
        serve_certificate(other)
        _flushed(base)
        _all_down(base, routes, "certificate verify failed")
        _ui_down(base, page_cookie, b"certificate verify failed")
        serve_certificate(good)
        _recovered(base, routes)
    said = log.read_text()
    assert "unhandled error" not in said and "Traceback" not in said, said[-8000:]
