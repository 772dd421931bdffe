"""One request never stalls the others (contract 14), at the sizes the limits allow,
through a real `podsync serve` on each engine.

While alice's big request runs, bob sends a small request back to back on his own
connection. Each answer bob waits for shows how long the server's event loop was
held: before, a 20,000-feed list replace held it for the whole replace (18 s on a
quiet machine) and an aggregated pull over 200,000 actions for over a second. The
target is ~50 ms of loop time; the bound asserted here is STALL_BOUND_S, or a few
times the slowest answer bob got with nothing else running, whichever is larger, so
that a loaded machine's scheduling does not fail the test while a stall still does.

The tests of one engine share one server and alice's 20,000-feed list (made once:
at these sizes the uploads cost more than what is measured).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from podsync.config import load_config
from podsync.services.accounts import AccountService
from tests.conftest import ENGINES, PASSWORD, SEEDED_USERS, ServeProcess, with_accounts
from tests.support.limits_support import basic, call, feeds, subscribed
from tests.support.ticker import Ticker

pytestmark = pytest.mark.slow

LIST_SIZE = 20_000  # sync.max_subscriptions_per_user's default
ACTIONS = 200_000  # gpodder.max_episode_actions_per_user's default
UPLOAD_BATCH = 5_000
STALL_BOUND_S = 1.0
BASELINE_FACTOR = 4


@contextmanager
def bob_ticking(base: str) -> Iterator[Ticker]:
    """bob's `GET devices` back to back; yields once his baseline is measured, with
    `recording` on for the block."""
    ticker = Ticker(base, "/api/2/devices/bob.json", basic("bob"))
    ticker.start()
    try:
        # His first call verifies the password (argon2); later ones hit the cache.
        assert ticker.answered.wait(60), "bob got no answer"
        time.sleep(0.1)
        ticker.recording = True
        time.sleep(1.5)
        ticker.recording = False
        ticker.baseline = ticker.worst()
        ticker.latencies.clear()
        ticker.recording = True
        yield ticker
    finally:
        ticker.recording = False
        ticker.stop()


def assert_not_stalled(ticker: Ticker, what: str) -> None:
    baseline = ticker.baseline
    bound = max(STALL_BOUND_S, BASELINE_FACTOR * baseline)
    assert not ticker.failures, ticker.failures
    assert len(ticker.latencies) >= 5, f"bob got {len(ticker.latencies)} answers during {what}"
    worst = ticker.worst()
    print(f"{what}: bob's slowest answer {worst:.3f} s, alone {baseline:.3f} s")
    assert worst < bound, (
        f"during {what} bob waited {worst:.2f} s for one answer "
        f"(alone: {baseline:.3f} s at worst; bound {bound:.2f} s)"
    )


@pytest.fixture(scope="module", params=ENGINES)
def base(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    seeded_template: Path,
) -> Iterator[str]:
    """One `podsync serve` of the engine for the module's tests, with the seeded users."""
    directory = tmp_path_factory.mktemp(f"stalls-{request.param}")
    url = request.getfixturevalue("pg_cluster").new_database() if request.param != "sqlite" else ""
    file = directory / "podsync.toml"
    file.write_text(
        f'[database]\npath = "{directory / "podsync.db"}"\n'
        + (f'url = "{url}"\n' if url else "")
        + "[server]\nmax_body_bytes = 4194304\n[feeds]\nfetch_metadata = false\n"
    )
    if url:

        async def seed(accounts: AccountService) -> None:
            for name in SEEDED_USERS:
                await accounts.add_user(name, PASSWORD)

        asyncio.run(with_accounts(load_config(file, environ={}), seed))
    else:
        shutil.copyfile(seeded_template, directory / "podsync.db")
    server = ServeProcess(["--config", str(file), "serve", "--port", "0"], directory)
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def full_list(base: str) -> dict[str, str]:
    """alice has LIST_SIZE feeds on the server; `prefix` names the list she has now."""
    assert (
        call(base, "PUT", "/subscriptions/alice/phone.json", body=feeds("a", LIST_SIZE))[0] == 200
    )
    return {"prefix": "a"}


def test_a_list_replace_at_the_limit_does_not_stall_other_users(
    base: str, full_list: dict[str, str]
) -> None:
    other = "b" if full_list["prefix"] == "a" else "a"  # none of the feeds she has
    second = feeds(other, LIST_SIZE)
    with bob_ticking(base) as ticker, ThreadPoolExecutor(1) as pool:
        started = time.perf_counter()
        replace = pool.submit(call, base, "PUT", "/subscriptions/alice/phone.json", body=second)
        status, body = replace.result()
        took = time.perf_counter() - started
    assert status == 200, body
    full_list["prefix"] = other
    assert_not_stalled(ticker, f"a {LIST_SIZE}-feed list replace ({took:.1f} s)")
    assert subscribed(base) == sorted(second)


@pytest.mark.parametrize("fmt", ["opml", "json", "txt"])
def test_a_simple_api_list_at_the_limit_does_not_stall_other_users(
    base: str, full_list: dict[str, str], fmt: str
) -> None:
    with bob_ticking(base) as ticker, ThreadPoolExecutor(1) as pool:
        started = time.perf_counter()
        gets = 0
        while gets < 3 or time.perf_counter() - started < 1.5:  # room for bob's answers
            status, _ = pool.submit(call, base, "GET", f"/subscriptions/alice.{fmt}").result()
            assert status == 200
            gets += 1
        took = time.perf_counter() - started
    assert_not_stalled(ticker, f"{gets} GETs of a {LIST_SIZE}-feed .{fmt} list ({took:.1f} s)")


def _actions(start: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "podcast": f"https://p{n % 50}.example/feed.xml",
            "episode": f"https://p{n % 50}.example/{n}.mp3",
            "action": "play",
            "timestamp": "2026-01-01T00:00:00",
            "started": 0,
            "position": n % 3600,
            "total": 3600,
        }
        for n in range(start, start + count)
    ]


def test_pulls_over_the_action_bound_do_not_stall_other_users(base: str) -> None:
    for start in range(0, ACTIONS, UPLOAD_BATCH):
        status, body = call(
            base, "POST", "/api/2/episodes/alice.json", body=_actions(start, UPLOAD_BATCH)
        )
        assert status == 200, body
    with bob_ticking(base) as ticker, ThreadPoolExecutor(1) as pool:
        started = time.perf_counter()
        since, pages = 0, 0
        while pages < 20:  # Kasts' first sync: every page of the aggregated history
            path = f"/api/2/episodes/alice.json?since={since}&aggregated=true"
            status, body = pool.submit(call, base, "GET", path).result()
            assert status == 200, body
            if not body["actions"]:
                break
            assert len(body["actions"]) == 10_000  # a page (gpodder.episode_page_size)
            since, pages = body["timestamp"], pages + 1
        took = time.perf_counter() - started
    assert pages == 20
    assert_not_stalled(ticker, f"an aggregated pull of {ACTIONS} actions ({took:.1f} s)")
    # The Nextcloud API's first sync: every one of them, in one answer.
    with bob_ticking(base) as ticker, ThreadPoolExecutor(1) as pool:
        started = time.perf_counter()
        path = "/index.php/apps/gpoddersync/episode_action?since=0"
        status, body = pool.submit(call, base, "GET", path).result()
        took = time.perf_counter() - started
    assert status == 200, body
    assert len(body["actions"]) == ACTIONS
    assert_not_stalled(ticker, f"a Nextcloud pull of {ACTIONS} actions ({took:.1f} s)")
