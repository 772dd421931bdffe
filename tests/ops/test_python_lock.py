"""A serving process hands the interpreter's lock over within a millisecond
(`podsync/serve/python_lock.py`), so that a worker thread running Python holds each
SQLite statement of other requests back for about that long (what that does to other
requests: tests/ops/test_loop_stalls.py prints it). It runs in a fresh interpreter:
the switch interval is the process's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from podsync.serve.python_lock import SWITCH_INTERVAL_S

# Starts serving on a port of its own, as `podsync serve` does (through start()).
SERVING = """
import asyncio, json, sys
from podsync.config import load_config
from podsync.serve import server

async def main():
    config = load_config(sys.argv[1], environ={})
    before = sys.getswitchinterval()
    runner, _ = await server.start(config)
    try:
        serving = sys.getswitchinterval()
    finally:
        await runner.cleanup()
    print(json.dumps({"before": before, "serving": serving}))

asyncio.run(main())
"""


def test_a_serving_process_hands_the_lock_over_within_a_millisecond(tmp_path: Path) -> None:
    config = tmp_path / "podsync.toml"
    config.write_text(
        f'[server]\nhost = "127.0.0.1"\nport = 0\n\n[database]\npath = "{tmp_path / "p.db"}"\n'
        "[feeds]\nfetch_metadata = false\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", SERVING, str(config)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.splitlines()[-1])
    assert got == {"before": 0.005, "serving": SWITCH_INTERVAL_S}, got  # 0.005: CPython's
