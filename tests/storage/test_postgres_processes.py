"""Several `podsync serve` processes on one PostgreSQL database (contract section 13).

Writers of one user post batches to every process at once, while a poller walks
the change feed from start to end, also through every process. Each feed is
subscribed exactly once, so each entity changes exactly once: the poller must see
every one of them exactly once. A change number committed after a higher one (the
trap of a global sequence with concurrent transactions) would be stepped over by a
poller already past it, and show up here as a missing entity.

Writers of a second user run at the same time: change numbers are global, so a
poller of alice at the head of her feed is handed a position past bob's changes,
and must never be handed one past a change of hers still to commit.

Beside them, every writer also subscribes the same shared feeds (one entity per
url key across processes) and replays one action id (idempotency across processes).
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from podsync.config import Config
from tests.conftest import PASSWORD, MakeConfig, with_accounts
from tests.support.server_support import access_token, request, serving

WRITERS_PER_PROCESS = 3
BATCHES = 8
BATCH = 5
SHARED = 6


def _post(base: str, token: str, client_id: str, actions: list[dict[str, Any]]) -> Any:
    url = base + "/api/v1/sync"
    body = {"requests": actions}
    headers_token = token
    status, answer = _request_with_client(url, body, headers_token, client_id)
    assert status == 200, answer
    return answer


def _request_with_client(url: str, body: Any, token: str, client_id: str) -> tuple[int, Any]:
    import json
    import urllib.error
    import urllib.request

    req = urllib.request.Request(  # noqa: S310 - loopback
        url,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {token}",
            "Client-ID": client_id,
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def _subscribe(feed_url: str, action_id: str | None = None) -> dict[str, Any]:
    return {
        "action_id": action_id or str(uuid.uuid4()),
        "type": "subscription",
        "action": "subscribe",
        "occurred_at": "2026-01-01T00:00:00Z",
        "data": {"feed_url": feed_url},
    }


def _writer(bases: list[str], token: str, writer: int, replayed: str) -> list[Any]:
    client_id = str(uuid.UUID(int=writer + 1))
    answers = []
    for batch in range(BATCHES):
        base = bases[(writer + batch) % len(bases)]
        actions = [_subscribe(f"https://w{writer}.example/b{batch}/{i}.xml") for i in range(BATCH)]
        if batch == 1:
            actions += [_subscribe(f"https://shared.example/{i}.xml") for i in range(SHARED)]
        if batch == 2:
            actions.append(_subscribe("https://replayed.example/rss", replayed))
        answers.append(_post(base, token, client_id, actions))
    return answers


def _poll(bases: list[str], token: str, stop: threading.Event) -> list[str]:
    """Walk the feed until `stop` is set and the head is reached; each result's url."""
    seen: list[str] = []
    stop_by = time.monotonic() + 300
    path = "/api/v1/sync?include_own=true&limit=7"
    turn = 0
    while True:
        stopping = stop.is_set()  # read before the request: no change can follow it
        status, page = request(bases[turn % len(bases)] + path, token=token)
        turn += 1
        assert status == 200, page
        seen += [r["data"]["feed_url"] for r in page["results"]]
        parts = urlsplit(page["next_since"])
        path = f"{parts.path}?{parts.query}"
        if stopping and not page["has_next"] and not page["results"]:
            return seen
        assert time.monotonic() < stop_by, "the feed never reached its head"


@pytest.mark.parametrize("processes", [2, 4])
@pytest.mark.parametrize("db_engine", ["postgresql"], indirect=True)
def test_processes_share_one_database_and_the_feed_misses_nothing(
    make_config: MakeConfig, tmp_path: Path, processes: int
) -> None:
    config: Config = make_config()

    async def users(accounts: Any) -> None:
        await accounts.add_user("alice", PASSWORD)
        await accounts.add_user("bob", PASSWORD)

    import asyncio

    asyncio.run(with_accounts(config, users))
    with contextlib.ExitStack() as stack:
        bases = [
            stack.enter_context(serving(config, tmp_path / f"serve-{n}.log"))
            for n in range(processes)
        ]
        token = access_token(bases[0], "alice", PASSWORD)
        other = access_token(bases[-1], "bob", PASSWORD)
        writers = WRITERS_PER_PROCESS * processes
        replayed = str(uuid.uuid4())
        stop = threading.Event()
        with ThreadPoolExecutor(2 * writers + 1) as pool:
            poller = pool.submit(_poll, bases, token, stop)
            try:
                jobs = [pool.submit(_writer, bases, token, w, replayed) for w in range(writers)]
                others = [pool.submit(_writer, bases, other, w, replayed) for w in range(writers)]
                answers = [job.result() for job in jobs]
                assert all(job.result() for job in others)
            finally:
                stop.set()  # the poller stops at the head, also when a writer failed
            seen = poller.result()

    own = {f"https://w{w}.example/b{b}/{i}.xml" for w in range(writers) for b in range(BATCHES)
           for i in range(BATCH)}  # fmt: skip
    shared = {f"https://shared.example/{i}.xml" for i in range(SHARED)}
    expected = own | shared | {"https://replayed.example/rss"}
    # Every entity changed once: seen once, none missing, none twice.
    assert len(seen) == len(set(seen)), "an entity was delivered twice"
    assert set(seen) == expected, f"missing: {sorted(expected - set(seen))[:5]}"
    # One entity per url key: every writer got the same sync_id for each shared feed.
    shared_ids: dict[str, set[str]] = {}
    replay_answers = []
    for per_writer in answers:
        for body in per_writer:
            for result in body["results"]:
                data = result.get("data") or {}
                if data.get("feed_url", "").startswith("https://shared.example/"):
                    shared_ids.setdefault(data["feed_url"], set()).add(data["sync_id"])
                if data.get("feed_url") == "https://replayed.example/rss":
                    replay_answers.append(result)
    assert {url: len(ids) for url, ids in shared_ids.items()} == dict.fromkeys(shared, 1)
    # One action id from every writer, at once on different processes: applied once,
    # the same answer to every replay.
    assert len(replay_answers) == writers
    assert len({r["data"]["sync_id"] for r in replay_answers}) == 1
