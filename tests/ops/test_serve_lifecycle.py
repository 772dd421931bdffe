"""A real `podsync serve` process: a client that hangs up mid-body (issue 10 item 8)
and SIGTERM with a stalled request (item 9, `server.shutdown_timeout`)."""

from __future__ import annotations

import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server_process import ServerProcess, free_port

PARTIAL_LOGIN = (
    b"POST /auth/login HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
    b'Content-Length: 1000\r\n\r\n{"username": "al'
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    port = free_port()
    config = tmp_path / "server.toml"
    config.write_text(
        f'[server]\nhost = "127.0.0.1"\nport = {port}\nshutdown_timeout = 1\n'
        f'[database]\npath = "{tmp_path / "podsync.db"}"\n'
        '[log]\nlevel = "info"\naccess_log = true\n'
        "[feeds]\nfetch_metadata = false\n"
    )
    process = ServerProcess(config, port, tmp_path / "server.log")
    process.start()
    try:
        yield process
    finally:
        process.stop()


def _send_partial(server: ServerProcess) -> socket.socket:
    host, port = server.base_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.sendall(PARTIAL_LOGIN)
    return sock


def _wait_for(path: Path, text: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = path.read_text()
        if text in log:
            return log
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not logged within {timeout} s:\n{path.read_text()}")


def test_a_client_hanging_up_mid_body_is_an_info_line_not_a_500(server: ServerProcess) -> None:
    sock = _send_partial(server)
    time.sleep(0.2)  # the handler is reading the body now
    sock.close()
    log = _wait_for(server.log_path, '"POST /auth/login" 499')
    assert "INFO podsync.web: client went away during POST /auth/login" in log
    assert "Traceback" not in log
    assert " 500 " not in log
    assert "ERROR" not in log


def test_sigterm_with_a_stalled_request_exits_within_shutdown_timeout(
    server: ServerProcess,
) -> None:
    sock = _send_partial(server)  # never finishes its body
    try:
        time.sleep(0.2)
        assert server.proc is not None
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        returncode = server.proc.wait(timeout=15)
        took = time.monotonic() - started
    finally:
        sock.close()
    assert returncode == 0
    # shutdown_timeout is 1 s; aiohttp's default was 60 s (61.7 s seen).
    assert took < 6, took
    assert "stopped" in server.log_path.read_text()
