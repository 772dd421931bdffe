"""An import is bounded like an upload (contract 16): through the real CLI, in a
process of its own, against hostile servers on loopback, it holds memory in
proportion to what the user may keep, reads each device once, stops at its bounds
with a message naming them, keeps its report small, and ends promptly on SIGTERM.

The memory bound asserted is the one docs/limits.md states for the command at the
default limits."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from typing import Any

import pytest

from podsync.config import Config
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.writes import EpisodeWrites, Imported
from podsync.services.opml_io import OpmlService
from podsync.services.remote_import import RemoteAccount, RemoteImportService
from podsync.services.remote_import.bounds import ImportBounds
from podsync.services.remote_import.jobs import ImportJobs
from podsync.services.sync import SyncService
from podsync.storage.engine import create_engine
from podsync.store.episodes import EpisodeAction
from tests.conftest import PASSWORD, with_accounts
from tests.support.cli_support import add_user, stored
from tests.support.hostile_remotes import (
    HugeArray,
    JunkPages,
    ManyFeeds,
    OneDeviceManyTimes,
    Trickle,
)
from tests.support.import_support import import_in_process
from tests.support.remote_peers import FEEDS, REMOTE_PASSWORD, stored_actions
from tests.support.server_support import podsync_command

pytestmark = pytest.mark.slow

CLI_MEMORY_MIB = 150  # docs/limits.md: the command's peak at the default limits
READ_BOUND = "400,000 episode actions read, the most one import reads (twice "


def episode_calls(calls: list[str]) -> int:
    return sum(1 for c in calls if "/episodes/" in c)


def test_pages_of_junk_that_never_end_stop_at_the_read_bound_in_bounded_memory(
    config: Config,
) -> None:
    """200,000 new malformed actions a page, a newer timestamp each time."""
    add_user(config)
    with JunkPages(per_page=200_000) as remote:
        run = import_in_process(config, remote.base)
        calls = list(remote.calls)
    print(f"junk pages: peak {run.peak_rss_mib:.0f} MiB, {run.seconds:.1f} s")
    assert run.killed is None, run.killed
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"The import stopped: {READ_BOUND}gpodder.max_episode_actions_per_user)" in run.stdout
    assert "Episode actions: 0 added, 0 already there, 400,000 skipped." in run.stdout
    assert episode_calls(calls) == 3  # 200,000, 200,000, then one past the bound
    assert run.peak_rss_mib < CLI_MEMORY_MIB
    assert stored(config) == {(url, None, True) for url in FEEDS[:2]}  # what it wrote stays


def test_one_huge_array_of_numbers_stops_at_the_read_bound_in_bounded_memory(
    config: Config,
) -> None:
    """`{"timestamp":1,"actions":[1,1,1,...]}`, 62 million numbers (124 MB)."""
    add_user(config)
    with HugeArray(count=62_000_000) as remote:
        run = import_in_process(config, remote.base, timeout_s=120)
    print(f"huge array: peak {run.peak_rss_mib:.0f} MiB, {run.seconds:.1f} s")
    assert run.killed is None, run.killed
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"The import stopped: {READ_BOUND}" in run.stdout
    assert "1 action skipped: not an object" in run.stdout  # the same junk, counted once
    assert run.peak_rss_mib < CLI_MEMORY_MIB


def test_a_device_named_thousands_of_times_is_read_once(config: Config) -> None:
    add_user(config)
    with OneDeviceManyTimes(times=20_000) as remote:
        run = import_in_process(config, remote.base, timeout_s=120)
        calls = list(remote.calls)
    assert run.killed is None, run.killed
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 subscriptions on 1 device" in run.stdout
    assert sum(1 for c in calls if "/api/2/subscriptions/" in c) == 1
    assert len(calls) == 4  # sign-in, devices, the device's list, episode actions


def test_a_million_feeds_stop_at_the_subscription_limit_and_the_report_stays_small(
    config: Config,
) -> None:
    add_user(config)
    with ManyFeeds(count=1_000_000) as remote:
        run = import_in_process(config, remote.base, timeout_s=240)
        calls = list(remote.calls)
    print(f"a million feeds: peak {run.peak_rss_mib:.0f} MiB, {run.seconds:.1f} s")
    assert run.killed is None, run.killed
    assert run.returncode == 1, run.stdout + run.stderr
    assert "20,000 subscriptions on 1 device" in run.stdout
    assert "Subscriptions: 20,000 added, 0 subscribed again, 0 already there, 0 skipped." in (
        run.stdout
    )
    assert (
        "The import stopped: the server lists more than 20,000 feeds, the most an account "
        "may subscribe to (sync.max_subscriptions_per_user); the first 20,000 were read"
    ) in run.stdout
    assert episode_calls(calls) == 0  # stopped there
    assert len(stored(config)) == 20_000
    assert run.peak_rss_mib < CLI_MEMORY_MIB


def test_distinct_out_of_range_positions_make_one_reason_not_300000(config: Config) -> None:
    add_user(config)
    with ManyFeeds(count=2, bad_positions=300_000) as remote:
        run = import_in_process(config, remote.base, timeout_s=240)
    assert run.killed is None, run.killed
    assert run.returncode == 0, run.stdout + run.stderr
    assert "300,000 actions skipped: position N is out of range" in run.stdout
    assert len(run.stdout.splitlines()) < 10
    assert run.peak_rss_mib < CLI_MEMORY_MIB


def test_sigterm_ends_an_import_promptly_and_its_report_says_so(config: Config) -> None:
    add_user(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
    env["PODSYNC_IMPORT_PASSWORD"] = REMOTE_PASSWORD
    with Trickle(pause_s=0.002) as remote:
        argv = podsync_command(config, "user", "import-from", "alice", remote.base)
        proc = subprocess.Popen(
            [*argv, "--username", "remote"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while len(stored_actions(config.database.path, "alice")) < 500:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "nothing was stored"
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            started = time.monotonic()
            out, err = proc.communicate(timeout=30)
            took = time.monotonic() - started
        finally:
            if proc.poll() is None:
                proc.kill()
    assert took < 5, f"SIGTERM took {took:.1f} s"
    assert proc.returncode == 1, out + err
    assert "The import stopped: stopped by SIGTERM." in out
    added = len(stored_actions(config.database.path, "alice"))
    assert f"Episode actions: {added:,} added" in out  # what it wrote is kept and counted


async def _with_alice(config: Config) -> None:
    async def seed(accounts: Any) -> None:
        await accounts.add_user("alice", PASSWORD)

    await with_accounts(config, seed)


async def _service_import(
    config: Config,
    bounds: ImportBounds,
    base: str,
    writes: type[EpisodeWrites] = EpisodeWrites,
) -> str:
    """An import through the services with `bounds` (the real database); its report."""
    db = create_engine(config.database)
    await db.open()
    try:
        opml = OpmlService(db, SyncService(db, config.sync))
        episodes = writes(db, UploadBounds(config.gpodder))
        jobs = ImportJobs(db, RemoteImportService(opml, episodes, bounds), config.auth)
        if isinstance(episodes, _StoppedAfterCommit):
            episodes.jobs = jobs
        user = await opml.require_user("alice")
        account = RemoteAccount(base, "remote", REMOTE_PASSWORD)
        job = await jobs.run_here(user, account, allow_private=True, say=print)
        assert job.report is not None
        return "\n".join(job.report.lines())
    finally:
        await db.close()


class _StoppedAfterCommit(EpisodeWrites):
    """The import's episode writes, the real ones, with a stop (what SIGTERM and Cancel
    do) coming right after the first write committed and before its caller resumed:
    the moment a signal can land in."""

    jobs: ImportJobs | None = None

    async def store_imported(self, user_id: int, parsed: list[EpisodeAction]) -> Imported:
        done = await super().store_imported(user_id, parsed)
        if self.jobs is not None:
            self.jobs.stop_all("stopped by SIGTERM")
            self.jobs = None
            await asyncio.sleep(0)  # where a cancelled caller would stop
        return done


async def test_a_stop_that_lands_after_a_commit_counts_what_it_committed(
    config: Config,
) -> None:
    await _with_alice(config)
    bounds = ImportBounds.for_config(config)
    with Trickle(pause_s=0.002) as remote:
        text = await _service_import(config, bounds, remote.base, _StoppedAfterCommit)
    added = len(stored_actions(config.database.path, "alice"))
    assert added > 0
    assert "The import stopped: stopped by SIGTERM." in text
    assert f"Episode actions: {added:,} added" in text, text


async def test_an_import_stops_at_its_deadline_and_at_its_bound_on_requests(
    config: Config,
) -> None:
    await _with_alice(config)
    defaults = ImportBounds.for_config(config)
    with Trickle(pause_s=0.01) as remote:
        started = time.monotonic()
        text = await _service_import(config, _with(defaults, deadline_s=1.5), remote.base)
        took = time.monotonic() - started
    assert "The import stopped: the import ran for 1.5 seconds, its deadline." in text
    assert took < 10
    with JunkPages(per_page=1) as remote:
        text = await _service_import(config, _with(defaults, max_requests=6), remote.base)
        calls = len(remote.calls)
    assert "The import stopped: 6 requests to that server, the most one import makes." in text
    assert calls == 6


def _with(bounds: ImportBounds, **changes: float) -> ImportBounds:
    from dataclasses import replace

    return replace(bounds, **changes)  # type: ignore[arg-type]
