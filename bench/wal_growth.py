"""The SQLite `-wal` file under writes that never pause.

Starts `podsync serve` on a fresh database (durability "full") and has N clients
push 30 new feeds each to one user's gpodder subscriptions, back to back, for S
seconds, sampling the `-wal` file's size every second. Prints the pushes done, the
largest `-wal` and the size when the writes stop. A bounded log stays within a few
tens of MB however long this runs; an unbounded one grows by about 25-40 MB a
second here.

    python bench/wal_growth.py [--seconds 40] [--clients 8] [--podsync PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import aiohttp

PASSWORD = "wal-growth-password"
UNLIMITED = "100000000"


def wal_size(wal: Path) -> int:
    """A stat, as podsync's own checkpointer does (opening the file is not harmless)."""
    try:
        return wal.stat().st_size
    except FileNotFoundError:
        return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_healthy(base: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(100):
            try:
                async with session.get(base + "/healthz") as answer:
                    if answer.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise SystemExit("podsync did not start")


async def run(base: str, wal: Path, seconds: float, clients: int) -> None:
    counter = itertools.count()
    pushes = 0
    stop = time.monotonic() + seconds

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal pushes
        while time.monotonic() < stop:
            n = next(counter)
            add = [f"https://feeds{n}.example.com/{i}/{os.urandom(4).hex()}.xml" for i in range(30)]
            url = f"{base}/api/2/subscriptions/bench/laptop.json"
            async with session.post(url, json={"add": add, "remove": []}) as answer:
                if answer.status != 200:
                    raise SystemExit(f"push answered {answer.status}: {await answer.text()}")
            pushes += 1

    auth = aiohttp.BasicAuth("bench", PASSWORD)
    async with aiohttp.ClientSession(auth=auth) as session:
        async with session.post(f"{base}/api/2/auth/bench/login.json") as answer:
            assert answer.status == 200, answer.status
        writers = asyncio.gather(*(client(session) for _ in range(clients)))
        largest = 0
        print("second  pushes  -wal MB")
        while not writers.done():
            await asyncio.sleep(1)
            size = wal_size(wal)
            largest = max(largest, size)
            elapsed = seconds - (stop - time.monotonic())
            print(f"{elapsed:6.0f}  {pushes:6d}  {size / 1e6:7.1f}")
        await writers
    final = wal_size(wal)
    print(
        f"{pushes} pushes of 30 feeds by {clients} clients in {seconds:.0f} s; largest -wal "
        f"{largest / 1e6:.1f} MB, {final / 1e6:.1f} MB when the writes stopped"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--podsync", default=shutil.which("podsync") or "podsync")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        env = {
            **os.environ,
            "XDG_DATA_HOME": directory,
            "XDG_CONFIG_HOME": directory,
            "PODSYNC_SYNC_MAX_SUBSCRIPTIONS_PER_USER": UNLIMITED,
            "PODSYNC_SYNC_MAX_ENTITIES_PER_USER": UNLIMITED,
            "PODSYNC_FEEDS_FETCH_METADATA": "false",  # its feeds are not served anywhere
        }
        subprocess.run(
            [args.podsync, "user", "add", "bench", "--password-stdin"],
            input=PASSWORD.encode(), env=env, check=True, capture_output=True,
        )  # fmt: skip
        port = free_port()
        log = open(os.path.join(directory, "serve.log"), "wb")  # noqa: SIM115
        server = subprocess.Popen(
            [args.podsync, "serve", "--port", str(port)], env=env, stderr=log, stdout=log
        )
        try:
            base = f"http://127.0.0.1:{port}"
            asyncio.run(wait_healthy(base))
            wal = Path(directory, "podsync", "podsync.db-wal")
            asyncio.run(run(base, wal, args.seconds, args.clients))
        finally:
            server.terminate()
            server.wait(timeout=60)
            log.close()


if __name__ == "__main__":
    main()
