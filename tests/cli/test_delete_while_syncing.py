"""`podsync user delete` while that user syncs (contract section 14): each request in
flight is applied before the delete or answered 401, never a 500, on episode
uploads, gpodder subscription pushes and /api/v1/sync, on both engines. The delete
is the real CLI in its own process, beside a real `podsync serve` that several
writers keep busy."""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import PASSWORD, MakeConfig
from tests.support.cli_support import add_user
from tests.support.gpodder_support import basic
from tests.support.http_calls import call
from tests.support.server_support import access_token, podsync_command, serving
from tests.support.sync_helpers import action

pytestmark = pytest.mark.both_engines

USERS = ("u0",)
WRITERS_PER_KIND = 2
KINDS = ("episodes", "subscriptions", "sync")


def _write(base: str, name: str, kind: str, token: str, n: int) -> int:
    feed = f"https://{kind}.example/{n}/rss"
    if kind == "episodes":
        body = [
            {"podcast": feed, "episode": f"{feed}/{i}.mp3", "action": "download",
             "device": f"phone{n % 3}"}
            for i in range(10)
        ]  # fmt: skip
        return call("POST", f"{base}/api/2/episodes/{name}.json", body, basic(name)).status
    if kind == "subscriptions":
        body = {"add": [f"{feed}/{i}" for i in range(5)], "remove": []}
        url = f"{base}/api/2/subscriptions/{name}/phone{n % 3}.json"
        return call("POST", url, body, basic(name)).status
    body = {"requests": [action(feed_url=f"{feed}/{i}") for i in range(5)]}
    auth = {"Authorization": f"Bearer {token}"}
    return call("POST", f"{base}/api/v1/sync", body, auth).status


def _writer(base: str, name: str, kind: str, token: str, deleted: threading.Event) -> Counter[int]:
    seen: Counter[int] = Counter()
    for n in itertools.count():
        status = _write(base, name, kind, token, n)
        seen[status] += 1
        assert status in (200, 401), f"{kind} of {name} answered {status}"
        if deleted.is_set() and status == 401:
            return seen
    raise AssertionError("unreachable")


def test_deleting_a_user_while_it_syncs_answers_200_or_401_never_500(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    config = make_config(gpodder={"basic_cache_seconds": 300})
    for name in USERS:
        add_user(config, name)
    with serving(config, tmp_path / "serve.log") as base:
        for name in USERS:
            tokens = {name: access_token(base, name, PASSWORD)}
            deleted = threading.Event()
            with ThreadPoolExecutor(len(KINDS) * WRITERS_PER_KIND) as pool:
                futures = [
                    pool.submit(_writer, base, name, kind, tokens[name], deleted)
                    for kind in KINDS
                    for _ in range(WRITERS_PER_KIND)
                ]
                time.sleep(1.0)  # every writer is in full swing
                done = subprocess.run(
                    podsync_command(config, "user", "delete", name, "--yes"),
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                assert done.returncode == 0, done.stderr
                deleted.set()
                seen = sum((f.result(timeout=60) for f in futures), Counter[int]())
            assert seen[200] > 0 and seen[401] > 0, seen
        log = (tmp_path / "serve.log").read_text()
        assert "unhandled error" not in log, log
