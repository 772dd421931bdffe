"""`podsync serve --workers 2` (`server.workers`), the real command: requests spread
over both workers and the metrics add them up; a worker killed under load loses no
acknowledged write and is replaced, with a log line; SIGTERM stops every process
promptly; SIGHUP reloads every worker; the background tasks run on one worker; a
port in use and a worker that cannot start are one `Error:` line."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from podsync.storage.sqlite_checkpoint import IDLE_SECONDS
from tests.conftest import PASSWORD
from tests.support.feed_site import FeedSite
from tests.support.ledger import OpaWriter, db_check, opa_login
from tests.support.workers_support import SERVING, ServerTree

CLIENTS = 6
FEEDS = 5
KILLED = re.compile(
    r"worker (\d) \(pid (\d+)\) was killed by signal 9 \(SIGKILL\); starting another"
)
TIMEOUT = aiohttp.ClientTimeout(total=20)


async def hammer(base: str, path: str, count: int, parallel: int = 8, **headers: str) -> list[int]:
    """`count` GETs, `parallel` at a time, each on a connection of its own (a new
    connection goes to whichever worker accepts it first); their statuses."""
    statuses: list[int] = []
    left = [count]

    async def one() -> None:
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(base, connector=connector, timeout=TIMEOUT) as session:
            while left[0] > 0:
                left[0] -= 1
                async with session.get(path, headers=headers) as response:
                    await response.read()
                    statuses.append(response.status)

    await asyncio.gather(*(one() for _ in range(parallel)))
    return statuses


def answered_by(tree: ServerTree, path: str) -> Counter[int]:
    """How many requests of `path` each worker answered, from its access log lines."""
    return Counter(
        line["worker"] for line in tree.lines() if line.get("path") == path and "worker" in line
    )


def requests_counted(text: str, route: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "podsync_http_requests_total" and sample.labels["route"] == route
    )


async def test_requests_spread_over_both_workers_and_metrics_add_them_up(tmp_path: Path) -> None:
    with ServerTree(tmp_path, server="metrics = true\n") as tree:
        statuses = await hammer(tree.base_url, "/healthz", 200)
        assert statuses == [200] * 200
        # A request's access line is written just after its answer.
        await until(lambda: sum(answered_by(tree, "/healthz").values()) >= 200, seconds=5)
        by_worker = answered_by(tree, "/healthz")
        assert set(by_worker) == {0, 1}, by_worker  # both answered
        assert sum(by_worker.values()) == 200
        await asyncio.sleep(1.5)  # each worker publishes its numbers every second
        # Whichever worker answers a scrape, it counts every worker's requests.
        for _ in range(20):  # until each worker has answered a scrape
            scrapes = await asyncio.gather(*(scrape(tree.base_url) for _ in range(8)))
            assert {requests_counted(text, "/healthz") for text in scrapes} == {200}
            await asyncio.sleep(0.2)
            if set(answered_by(tree, "/metrics")) == {0, 1}:
                break
        assert set(answered_by(tree, "/metrics")) == {0, 1}


async def scrape(base: str) -> str:
    connector = aiohttp.TCPConnector(force_close=True)
    async with (
        aiohttp.ClientSession(base, connector=connector, timeout=TIMEOUT) as session,
        session.get("/metrics") as response,
    ):
        assert response.status == 200
        return await response.text()


async def test_a_worker_killed_under_load_loses_nothing_and_is_replaced(tmp_path: Path) -> None:
    tree = ServerTree(tmp_path)
    assert (
        tree.cli("user", "add", "alice", "--password-stdin", stdin=PASSWORD + "\n").returncode == 0
    )
    writer = OpaWriter()
    ledger = writer.ledger
    with tree:
        pids = tree.worker_pids()
        connector = aiohttp.TCPConnector(force_close=True)  # a new worker per request
        async with aiohttp.ClientSession(
            tree.base_url, connector=connector, timeout=TIMEOUT
        ) as session:
            await writer.prepare(session)
            stop = asyncio.Event()
            clients = [
                asyncio.create_task(writer.keep_posting(session, f"c{c}", stop))
                for c in range(CLIENTS)
            ]
            await until(lambda: len(ledger.acknowledged) >= 20)
            # The leader: its slot is started again and leads the next one.
            os.kill(pids[0], signal.SIGKILL)
            acknowledged = len(ledger.acknowledged)
            await until(lambda: len(ledger.acknowledged) >= acknowledged + 20)
            stop.set()
            await asyncio.gather(*clients)
            await writer.check_survivors(session)
        killed = tree.wait_for(KILLED)
        assert (killed[0].group(1), killed[0].group(2)) == ("0", str(pids[0]))
        new_pids = tree.worker_pids()
        assert new_pids[0] != pids[0] and new_pids[1] == pids[1]
        leaders = [m for m in tree.lines_matching(SERVING) if m.group(1) == "0"]
        assert len(leaders) == 2
        assert tree.stop() == 0
    checked = db_check(tree.config_path)
    assert checked.returncode == 0, checked.stderr


async def until(condition: Callable[[], bool], seconds: float = 30) -> None:
    async with asyncio.timeout(seconds):
        while not condition():  # noqa: ASYNC110 - polls what the clients record
            await asyncio.sleep(0.01)


async def test_a_revocation_ends_a_credential_on_every_worker_at_once(tmp_path: Path) -> None:
    """Each worker keeps its own caches of checked tokens and passwords; none of them
    outlives `user logout` or `user passwd` run beside the server, on any worker."""
    tree = ServerTree(tmp_path)
    assert (
        tree.cli("user", "add", "alice", "--password-stdin", stdin=PASSWORD + "\n").returncode == 0
    )
    with tree:
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(
            tree.base_url, connector=connector, timeout=TIMEOUT
        ) as session:
            bearer = await opa_login(session)
        basic = {
            "Authorization": "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
        }
        devices = "/api/2/devices/alice.json"
        assert await hammer(tree.base_url, "/api/v1/subscriptions", 40, **bearer) == [200] * 40
        assert await hammer(tree.base_url, devices, 40, **basic) == [200] * 40
        await until(lambda: len(answered_by(tree, devices)) == 2, seconds=5)
        assert set(answered_by(tree, "/api/v1/subscriptions")) == {0, 1}  # both cached it
        assert tree.cli("user", "logout", "alice").returncode == 0
        assert await hammer(tree.base_url, "/api/v1/subscriptions", 40, **bearer) == [401] * 40
        new_password = "a new password 5678"
        changed = tree.cli("user", "passwd", "alice", "--password-stdin", stdin=new_password + "\n")
        assert changed.returncode == 0, changed.stderr
        assert await hammer(tree.base_url, devices, 40, **basic) == [401] * 40
        assert tree.stop() == 0


async def test_sigterm_stops_every_process_promptly(tmp_path: Path) -> None:
    with ServerTree(tmp_path) as tree:
        assert len(tree.alive()) == 3
        assert tree.proc is not None
        started = time.monotonic()
        tree.proc.send_signal(signal.SIGTERM)
        assert tree.proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 5
        await until(lambda: tree.alive() == [], seconds=5)
        assert tree.lines()[-1]["message"] == "stopped"
        assert "worker" not in tree.lines()[-1]  # the parent's own line


async def test_sighup_reloads_every_worker(tmp_path: Path) -> None:
    origin = "https://app.example.org"
    with ServerTree(tmp_path) as tree:
        before = tree.worker_pids()
        statuses = await hammer(tree.base_url, "/healthz", 20, Origin=origin)
        assert statuses == [200] * 20
        tree.rewrite_config(f'cors_origins = ["{origin}"]\n')
        assert tree.proc is not None
        tree.proc.send_signal(signal.SIGHUP)
        tree.wait_for(re.compile("reloaded the configuration"))
        after = tree.worker_pids()
        assert set(after) == {0, 1} and not set(after.values()) & set(before.values())
        allowed = await cors_answers(tree.base_url, origin, 40)
        assert allowed == [origin] * 40  # every worker has the new configuration
        assert set(answered_by(tree, "/healthz")) == {0, 1}
        assert tree.stop() == 0


async def test_sighup_reloads_one_process_and_a_bad_configuration_changes_nothing(
    tmp_path: Path,
) -> None:
    origin = "https://app.example.org"
    with ServerTree(tmp_path, workers=1) as tree:
        assert tree.proc is not None
        tree.config_path.write_text(tree.config_path.read_text() + "[nowhere]\n")
        tree.proc.send_signal(signal.SIGHUP)
        tree.wait_for(
            re.compile(r"the configuration was not reloaded: unknown section \[nowhere\]")
        )
        assert await cors_answers(tree.base_url, origin, 3) == [None] * 3  # as it was
        tree.rewrite_config(f'cors_origins = ["{origin}"]\nworkers = 2\n')
        tree.proc.send_signal(signal.SIGHUP)
        tree.wait_for(re.compile("reloaded the configuration"))
        assert await cors_answers(tree.base_url, origin, 3) == [origin] * 3
        # One process stays one: going to several takes a restart, and says so.
        assert tree.lines_matching(re.compile(r"server\.workers changed: that takes a restart"))
        assert len(tree.alive()) == 1
        assert tree.stop() == 0


async def cors_answers(base: str, origin: str, count: int) -> list[str | None]:
    found: list[str | None] = []
    for _ in range(count):
        connector = aiohttp.TCPConnector(force_close=True)
        async with (
            aiohttp.ClientSession(base, connector=connector, timeout=TIMEOUT) as session,
            session.get("/healthz", headers={"Origin": origin}) as response,
        ):
            found.append(response.headers.get("Access-Control-Allow-Origin"))
    return found


async def test_the_background_tasks_run_on_the_leader_alone(tmp_path: Path) -> None:
    """The feed fetcher's passes and the checkpoints: one worker runs them for all."""
    site = FeedSite()
    await site.start()
    try:
        tree = ServerTree(
            tmp_path, workers=3, extra="[feeds]\nfetch_metadata = true\nallow_private = true\n"
        )
        added = tree.cli("user", "add", "alice", "--password-stdin", stdin=PASSWORD + "\n")
        assert added.returncode == 0, added.stderr
        opml = tmp_path / "feeds.opml"
        outlines = "".join(
            f'<outline type="rss" text="{n}" xmlUrl="{site.url(f"/show.xml?n={n}")}"/>'
            for n in range(FEEDS)
        )
        opml.write_text(f'<?xml version="1.0"?><opml version="2.0"><body>{outlines}</body></opml>')
        assert tree.cli("opml", "import", "alice", str(opml)).returncode == 0
        with tree:
            await until(lambda: site.hits["/show.xml"] >= FEEDS)
            started = [
                line.get("worker")
                for line in tree.lines()
                if str(line["message"]).startswith("fetching subscribed feeds")
            ]
            assert started == [0]
            # Writes through every worker, then quiet: the leader's checkpoint gives
            # the log's space back (it watches the others' commits too).
            connector = aiohttp.TCPConnector(force_close=True)
            async with aiohttp.ClientSession(
                tree.base_url, connector=connector, timeout=TIMEOUT
            ) as session:
                writer = OpaWriter()
                ledger = writer.ledger
                await writer.prepare(session)
                stop = asyncio.Event()
                writers = [
                    asyncio.create_task(writer.keep_posting(session, f"w{c}", stop))
                    for c in range(4)
                ]
                await until(lambda: len(ledger.acknowledged) >= 40)
                stop.set()
                await asyncio.gather(*writers)
            wal = tmp_path / "podsync.db-wal"
            assert log_size(wal) > 0
            await until(lambda: log_size(wal) == 0, seconds=IDLE_SECONDS + 10)
            assert site.hits["/show.xml"] == FEEDS  # each feed fetched once
            assert tree.stop() == 0
    finally:
        await site.close()


def log_size(path: Path) -> int:
    return path.stat().st_size


def test_a_port_in_use_is_one_error_line(tmp_path: Path) -> None:
    tree = ServerTree(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", tree.port))
        taken.listen()
        done = subprocess.run(tree.argv(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [
        f"Error: cannot listen on 127.0.0.1:{tree.port}: the address is already in use (is "
        "another podsync running?); choose another port with --port or server.port"
    ], done.stderr
    assert "Traceback" not in done.stderr


def test_a_worker_that_cannot_start_stops_the_server_with_its_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "podsync.db"
    tree = ServerTree(tmp_path, database=f'path = "{missing}"')
    done = subprocess.run(tree.argv(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [f"Error: directory {missing.parent} does not exist"], done.stderr
    assert "Traceback" not in done.stderr
