"""Several workers on one listening socket (`server.workers`): a worker takes one new
connection each time the socket wakes it, so a burst of connections (a client's or a
proxy's eight at once) is not all taken by whichever worker woke first; the kernel's
queue of waiting connections keeps its length. One process alone still takes every
connection waiting at once."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from podsync.serve.server import BACKLOG, listen, start
from podsync.web.process import Worker
from tests.conftest import MakeConfig

PROC_TCP = Path("/proc/net/tcp")
pytestmark = pytest.mark.skipif(
    not PROC_TCP.exists(), reason="needs Linux's /proc/net/tcp to see the accept queue"
)


def waiting(sock: socket.socket) -> int:
    """Connections in `sock`'s accept queue: a listener's rx_queue in /proc/net/tcp."""
    port = sock.getsockname()[1]
    for line in PROC_TCP.read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
            return int(fields[4].split(":")[1], 16)
    raise AssertionError(f"nothing listens on port {port}")


def connect(sock: socket.socket, count: int) -> list[socket.socket]:
    """`count` connections, each established by the kernel (in the accept queue)
    before the next; a connect that finds the queue full waits for a SYN retry (1 s),
    so the short timeout fails it."""
    address = sock.getsockname()[:2]
    return [socket.create_connection(address, timeout=0.5) for _ in range(count)]


def served(clients: list[socket.socket]) -> list[bytes]:
    for client in clients:
        client.settimeout(10)
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: podsync\r\nConnection: close\r\n\r\n")
    return [client.recv(4096).split(b"\r\n", 1)[0] for client in clients]


@pytest.mark.parametrize(("workers", "taken_at_most"), [(1, 8), (2, 2)])
async def test_a_worker_takes_one_waiting_connection_a_wakeup(
    make_config: MakeConfig, workers: int, taken_at_most: int
) -> None:
    config = make_config(server={"port": 0})
    sockets = listen("127.0.0.1", 0)
    [sock] = sockets
    clients = connect(sock, 8)
    try:
        assert waiting(sock) == 8
        runner, _ = await start(config, sockets, Worker(count=workers))
        try:
            for _ in range(2):  # two passes of the event loop
                await asyncio.sleep(0)
            taken = 8 - waiting(sock)
            assert 1 <= taken <= taken_at_most
            if workers == 1:
                assert taken == 8  # alone, every connection waiting at the first wake-up
            # None is lost: each is taken on a later pass, and answered.
            answers = await asyncio.to_thread(served, clients)
            assert answers == [b"HTTP/1.1 200 OK"] * 8
        finally:
            await runner.cleanup()
    finally:
        for client in clients:
            client.close()
        sock.close()


async def test_the_shared_queue_keeps_its_length(make_config: MakeConfig) -> None:
    """A worker's server must not shorten the queue the parent made (`listen(1)` on the
    shared socket would hold two connections, and drop the rest's SYNs for seconds)."""
    config = make_config(server={"port": 0})
    sockets = listen("127.0.0.1", 0)
    [sock] = sockets
    runner, _ = await start(config, sockets, Worker(count=2))
    clients: list[socket.socket] = []
    try:
        # The event loop does not run while these connect: all of them wait in the queue.
        clients = connect(sock, 40)
        assert waiting(sock) == 40 < BACKLOG
        answers = await asyncio.to_thread(served, clients)
        assert answers == [b"HTTP/1.1 200 OK"] * 40
    finally:
        await runner.cleanup()
        for client in clients:
            client.close()
        sock.close()
