"""The web UI's import from another server is a job (contract 16), through a real
`podsync serve` against servers on loopback: bounded in memory, one per user at a
time, visible and cancellable from any process on the same database, ended by
SIGTERM with its report saying so; wrong passwords are throttled without reaching
the remote; a private address is refused with what to do, and allowed to an admin.

The memory bound asserted is the one docs/limits.md states for the server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from podsync.config import Config
from tests.conftest import MakeConfig, ServeProcess
from tests.ops.test_loop_stalls import assert_not_stalled, bob_ticking
from tests.support.cli_support import run
from tests.support.hostile_remotes import JunkPages, ManyFeeds, Trickle
from tests.support.import_support import Browser, import_id, memory_mib
from tests.support.remote_peers import FEEDS, FlakyGpodder, stored_actions

pytestmark = pytest.mark.slow

Serve = Callable[..., ServeProcess]
SERVER_IMPORT_MIB = 100  # docs/limits.md: what one import adds to the server's peak


@pytest.fixture
def lan_config(make_config: MakeConfig, seeded_users: tuple[str, ...]) -> Config:
    return make_config(feeds={"fetch_metadata": False, "allow_private": True})


@contextmanager
def memory_watched(pid: int, kill_above_mib: float = 1024) -> Iterator[list[float]]:
    """The most the process held while the block ran ([MiB], sampled every 50 ms;
    its VmHWM is no use here: signing in hashed a password with argon2, 64 MiB);
    killed past `kill_above_mib`, so that a regression fails the test instead of
    taking the machine."""
    peak = [memory_mib(pid)[0]]
    done = threading.Event()

    def watch() -> None:
        import os
        import signal

        while not done.wait(0.05):
            rss = memory_mib(pid)[0]
            peak[0] = max(peak[0], rss)
            if rss > kill_above_mib:
                os.kill(pid, signal.SIGKILL)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield peak
    finally:
        done.set()
        watcher.join()


def test_junk_pages_from_the_form_stop_at_the_bound_in_bounded_memory(
    lan_config: Config, serve_process: Serve
) -> None:
    server = serve_process(lan_config)
    alice = Browser(server.url)
    before = memory_mib(server.proc.pid)[0]
    with JunkPages(per_page=200_000) as remote, memory_watched(server.proc.pid) as peak:
        status, location = alice.start_import(remote.base)
        assert status == 303, location
        text = alice.finished(location)
        episode_calls = sum(1 for c in remote.calls if "/episodes/" in c)
    print(f"junk pages from the form: server peak {before:.0f} -> {peak[0]:.0f} MiB")
    assert "Import stopped half way" in text
    assert "400,000 episode actions read, the most one import reads" in text
    assert episode_calls == 3
    assert peak[0] - before < SERVER_IMPORT_MIB


def test_one_import_per_user_at_a_time_and_cancel_stops_it(
    lan_config: Config, serve_process: Serve
) -> None:
    server = serve_process(lan_config)
    alice, bob = Browser(server.url), Browser(server.url, "bob")
    with Trickle() as remote:
        status, location = alice.start_import(remote.base)
        assert status == 303, location
        for _ in range(2):  # the same session again, at once: refused, not queued
            status, text = alice.start_import(remote.base)
            assert status == 409
            assert "Not started: an import from" in text
            assert "is running already" in text
        assert sum(1 for c in remote.calls if "login" in c) == 1
        # The command line is refused too; another user is not.
        cli = run(
            lan_config,
            *("user", "import-from", "alice", remote.base, "--username", "x"),
            env={"PODSYNC_IMPORT_PASSWORD": "x"},
        )
        assert cli.exit_code == 1
        assert "is running already" in cli.output
        status, bobs = bob.start_import(remote.base)
        assert status == 303, bobs
        _, page = alice.get(location)
        assert "Import running" in page
        assert "Cancel the import" in page
        status, _ = alice.post("/ui/import-from/cancel", {"import": import_id(location)})
        assert status == 303
        started = time.monotonic()
        text = alice.finished(location, within_s=30)
        assert time.monotonic() - started < 5
        assert "Import stopped half way" in text
        assert "The import stopped: cancelled on the Import and export page." in text
        assert "Import running" in bob.get(bobs)[1]  # bob's goes on
        bob.post("/ui/import-from/cancel", {"import": import_id(bobs)})
        bob.finished(bobs, within_s=30)
        deadline = time.monotonic() + 10
        while remote.streaming:  # both connections to the remote were closed
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_sigterm_stops_a_running_import_promptly_and_the_report_says_so(
    lan_config: Config, serve_process: Serve
) -> None:
    server = serve_process(lan_config)
    alice = Browser(server.url)
    with Trickle(pause_s=0.002) as remote:
        status, location = alice.start_import(remote.base)
        assert status == 303, location
        deadline = time.monotonic() + 60
        while len(stored_actions(lan_config.database.path, "alice")) < 500:
            assert time.monotonic() < deadline, "nothing was stored"
            time.sleep(0.1)
        started = time.monotonic()
        code = server.stop()
        took = time.monotonic() - started
    assert code == 0, server.output()
    assert took < 5, f"SIGTERM took {took:.1f} s"
    again = serve_process(lan_config)
    text = Browser(again.url).finished(location, within_s=5)
    assert "Import stopped half way" in text
    assert "The import stopped: podsync was shutting down." in text


def test_any_process_shows_cancels_and_refuses_while_another_runs_the_import(
    lan_config: Config, serve_process: Serve
) -> None:
    """Two `podsync serve` on one database, as several workers would run."""
    first, second = serve_process(lan_config), serve_process(lan_config)
    here, there = Browser(first.url), Browser(second.url)
    with Trickle() as remote:
        status, location = here.start_import(remote.base)
        assert status == 303, location
        time.sleep(3)  # a heartbeat or two
        status, page = there.get(location)
        assert status == 200
        assert "Import running" in page
        assert "episode actions." in page  # its counts so far
        status, text = there.start_import(remote.base)
        assert status == 409, text
        there.post("/ui/import-from/cancel", {"import": import_id(location)})
        text = there.finished(location, within_s=15)
    assert "The import stopped: cancelled on the Import and export page." in text
    assert here.finished(location, within_s=5) == here.get(location)[1]


def test_wrong_remote_passwords_are_throttled_per_user_without_reaching_the_remote(
    lan_config: Config, serve_process: Serve
) -> None:
    server = serve_process(lan_config)
    alice, bob = Browser(server.url), Browser(server.url, "bob")
    with FlakyGpodder(fail_at=None) as remote:
        for n in range(lan_config.auth.login_max_failures):
            status, text = alice.start_import(remote.base, password=f"guess-{n}")
            assert status == 400
            assert "That server refused this user name and password" in text
        assert remote.calls.count("login") == 5
        for password in ("guess-again", "remote-secret-9"):  # even the right one, now
            status, text = alice.start_import(remote.base, password=password)
            assert status == 429
            assert "too many passwords were refused by the servers you imported from" in text
            assert "Nothing was changed." in text
        assert remote.calls.count("login") == 5  # the remote heard none of them
        status, location = bob.start_import(remote.base)  # another user is not throttled
        assert status == 303, location
        assert "Import report" in bob.finished(location)
    assert remote.calls.count("login") == 6


def test_a_private_address_is_refused_with_what_to_do_and_an_admin_may_use_it(
    make_config: MakeConfig, seeded_users: tuple[str, ...], serve_process: Serve
) -> None:
    config = make_config()  # allow_private off: the default
    assert run(config, "user", "admin", "carol").exit_code == 0
    server = serve_process(config)
    alice, carol = Browser(server.url), Browser(server.url, "carol")
    with FlakyGpodder(count=10, page=10, fail_at=None) as remote:
        status, text = alice.start_import(remote.base)
        assert status == 403
        # Not allowed, whom to ask, and never what the address resolves to.
        assert "This address is not allowed." in text
        assert "Ask an admin of this podsync to run the import for you" in text
        assert "127.0.0.1" not in text.split("<body", 1)[1].replace(remote.base, "")
        assert "podsync user import-from" in text
        assert "Check the address" not in text
        assert remote.calls == []
        assert "As an admin, you may import" in carol.get("/ui/transfer")[1]
        assert "As an admin, you may import" not in alice.get("/ui/transfer")[1]
        status, location = carol.start_import(remote.base)
        assert status == 303, location
        text = carol.finished(location)
    assert "Subscriptions: 2 added" in text
    assert "Episode actions: 10 added, 0 already there, 0 skipped." in text
    assert len(stored_actions(config.database.path, "carol")) == 10
    assert FEEDS[0] in text or "2 subscriptions on 1 device" in text


def test_a_million_feeds_do_not_stall_other_users_and_the_report_stays_small(
    lan_config: Config, serve_process: Serve
) -> None:
    server = serve_process(lan_config)
    alice = Browser(server.url)
    with ManyFeeds(count=1_000_000) as remote, bob_ticking(server.url) as ticker:
        started = time.monotonic()
        status, location = alice.start_import(remote.base)
        assert status == 303, location
        text = alice.finished(location, within_s=300)
        took = time.monotonic() - started
    assert_not_stalled(ticker, f"an import of a million feeds from the web UI ({took:.1f} s)")
    assert "Subscriptions: 20,000 added" in text
    assert "the server lists more than 20,000 feeds" in text
    assert len(text.encode()) < 50_000
    with ManyFeeds(count=2, bad_positions=300_000) as remote:
        status, location = alice.start_import(remote.base)
        assert status == 303, location
        text = alice.finished(location, within_s=300)
    assert "300,000 actions skipped: position N is out of range" in text
    assert len(text.encode()) < 50_000
