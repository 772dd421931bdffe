"""bench/turn_probe.py, the server the write benches run (bench/opa_writes.py): it
wraps the SQLite engine's write, its group's begin and commit and the writer's log
restarts to meter the write turn, so a change of those signatures breaks every
write it serves (once every write answered 500, from a wrapper of `write()` that
took none of its options). A real server through the probe: a write of each API
answers 200, and the counters it publishes count them."""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import os
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.conftest import PASSWORD, with_accounts
from tests.support.http_calls import call
from tests.support.server_process import free_port, start_listening, write_server_config

ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "bench" / "turn_probe.py"


def _probe_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("turn_probe", PROBE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _posted(url: str, body: Any, headers: dict[str, str] | None = None) -> Any:
    answer = call("POST", url, body, headers)
    assert answer.status == 200, (url, answer.status, answer.description)
    return answer.json()


def test_the_write_benches_probe_serves_every_kind_of_write(tmp_path: Path) -> None:
    config = write_server_config(tmp_path, free_port())
    asyncio.run(with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PODSYNC_")}
    turns = tmp_path / "turns"
    turns.mkdir()
    log = tmp_path / "probe.log"
    # The start-up line start_listening waits for is logged at info.
    probe_env = {**env, "BENCH_TURN_DIR": str(turns), "PODSYNC_LOG_LEVEL": "info"}
    serve = [sys.executable, str(PROBE), "--config", str(tmp_path / "server.toml"), "serve"]
    server, base = start_listening(serve, log, probe_env)
    try:
        login = _posted(base + "/auth/login", {"username": "alice", "password": PASSWORD})
        bearer = {"Authorization": f"Bearer {login['access_token']}"}
        batch = {
            "requests": [
                {
                    "action_id": str(uuid.uuid4()),
                    "type": "subscription",
                    "action": "subscribe",
                    "occurred_at": "2026-01-01T00:00:00Z",
                    "data": {"feed_url": f"https://feeds.example/{n}.xml"},
                }
                for n in range(3)
            ]
        }
        _posted(base + "/api/v1/sync", batch, bearer)
        basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
        gpodder = {"Authorization": f"Basic {basic}"}
        adds = {"add": ["https://feeds.example/gp.xml"], "remove": []}
        _posted(base + "/api/2/subscriptions/alice/phone.json", adds, gpodder)
        play = {
            "podcast": "https://feeds.example/gp.xml",
            "episode": "https://feeds.example/gp/1.mp3",
            "action": "play",
            "timestamp": "2026-01-01T00:00:00",
            "started": 0,
            "position": 60,
            "total": 600,
        }
        _posted(base + "/api/2/episodes/alice.json", [play], gpodder)
        counted = _probe_module().read_all(turns)
    finally:
        server.terminate()
        server.wait(timeout=15)
    assert "Traceback" not in log.read_text()
    (held_ns, groups, blocks, *_), *others = counted.values()
    assert not others, "one serving process"
    # The login, the sync batch, the subscription upload and the episode upload
    # (its device made in the same write) at least.
    assert blocks >= 4 and groups >= 1 and held_ns > 0, counted
