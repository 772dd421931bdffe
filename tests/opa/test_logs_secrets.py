"""Contract section 3: no token, password or auth body ever reaches a log line or an
error; malformed HTTP is answered in the JSON shape without echoing its bytes."""

from __future__ import annotations

import json
import logging
import signal
import sqlite3
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from typing import Any

import aiohttp
import pytest

from podsync.config import Config
from podsync.serve.server import PodsyncRunner, start
from tests.conftest import PASSWORD, WHOAMI, ServeProcess, raw_http, run_cli

SECRET = "Sup3rS3cretT0ken-do-not-log"


@pytest.fixture
async def server(config: Config, seeded_users: Any) -> AsyncIterator[tuple[PodsyncRunner, int]]:
    """The real server (podsync.serve.server.start) on a free port."""
    runner, urls = await start(config.replace("server", port=0))
    try:
        yield runner, int(urls[0].rsplit(":", 1)[1])
    finally:
        await runner.cleanup()


def _malformed_requests() -> list[bytes]:
    auth = f"Authorization: Bearer {SECRET}\r\n".encode()
    body = f'{{"username": "alice", "password": "{SECRET}"}}'.encode()
    return [
        # a header line without a colon
        b"POST /auth/login HTTP/1.1\r\nHost: x\r\n" + auth + b"Broken " + body + b"\r\n\r\n",
        # a request line that is not HTTP
        b"POST /auth/login?password=" + SECRET.encode() + b" HTTP/9.x\r\n" + auth + b"\r\n",
        # a Content-Length that is not a number, then the body
        b"POST /auth/login HTTP/1.1\r\nHost: x\r\n"
        + auth
        + b"Content-Length: "
        + body
        + b"\r\n\r\n",
        # a method with a control character
        b"PO\x01ST /auth/login HTTP/1.1\r\n" + auth + b"\r\n" + body,
        # a header name with a space, holding the secret
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX Token: " + SECRET.encode() + b"\r\n\r\n",
        # chunked body with a bad chunk size
        b"POST /auth/login HTTP/1.1\r\nHost: x\r\n"
        + auth
        + b"Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
        + SECRET.encode()
        + b"\r\n"
        + body
        + b"\r\n",
    ]


@pytest.mark.parametrize("request_bytes", _malformed_requests())
async def test_malformed_http_is_a_json_400_that_echoes_nothing(
    server: tuple[PodsyncRunner, int], caplog: pytest.LogCaptureFixture, request_bytes: bytes
) -> None:
    with caplog.at_level(logging.DEBUG):
        answer = await raw_http(server[1], request_bytes)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1] == b"400", answer
    headers = head.decode().lower()
    assert "content-type: application/json" in headers
    assert "x-request-id: " in headers
    assert json.loads(body) == {
        "error": "Bad request",
        "description": "the request is not valid HTTP",
    }
    assert SECRET.encode() not in answer
    assert SECRET not in caplog.text
    assert "rejected a malformed request" in caplog.text


async def test_logs_of_a_session_hold_no_secret(
    server: tuple[PodsyncRunner, int], config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    base = f"http://127.0.0.1:{server[1]}"
    with caplog.at_level(logging.DEBUG):
        async with aiohttp.ClientSession() as session:
            async with session.post(
                f"{base}/auth/login", json={"username": "alice", "password": PASSWORD}
            ) as response:
                tokens = await response.json()
            secrets = [PASSWORD, tokens["access_token"], tokens["refresh_token"], SECRET]
            async with session.post(
                f"{base}/auth/refresh", json={"refresh_token": tokens["refresh_token"]}
            ) as response:
                secrets.append((await response.json())["access_token"])
            await session.post(f"{base}/auth/login", json={"username": "bob", "password": SECRET})
            await session.post(f"{base}/auth/login", data=SECRET.encode())
            await session.post(
                f"{base}/auth/refresh",
                data=f'{{"refresh_token": {SECRET}}}',
                headers={"Content-Type": "application/json"},
            )
            await session.get(f"{base}/healthz?access_token={tokens['access_token']}")
            await session.get(f"{base}{WHOAMI}?password={SECRET}")
            await session.get(
                f"{base}/api/v1/x", headers={"Authorization": f"Bearer {tokens['access_token']}"}
            )
    with closing(sqlite3.connect(config.database.path)) as conn:
        secrets += [row[0] for row in conn.execute("SELECT password_hash FROM users")]
        secrets += [
            row[0]
            for row in conn.execute(
                "SELECT value FROM meta WHERE key NOT IN ('change_seq', 'health_probe')"
            )
        ]
    access_lines = [r.getMessage() for r in caplog.records if r.name == "podsync.access"]
    assert len(access_lines) == 8
    assert any('"GET /healthz" 200' in line for line in access_lines)
    for secret in secrets:
        assert secret not in caplog.text
    assert "?" not in "".join(access_lines)


def test_serve_stderr_at_debug_level_holds_no_secret(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> None:
    result = run_cli(config, "user", "add", "alice", "--password-stdin", input=PASSWORD + "\n")
    assert result.exit_code == 0
    server = serve_process(config, env={"PODSYNC_LOG_LEVEL": "debug"})

    def post(path: str, body: dict[str, str]) -> Any:
        request = urllib.request.Request(  # noqa: S310
            server.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                return json.load(response)
        except urllib.error.HTTPError as exc:
            with exc:
                return json.load(exc)

    tokens = post("/auth/login", {"username": "alice", "password": PASSWORD})
    refreshed = post("/auth/refresh", {"refresh_token": tokens["refresh_token"]})
    post("/auth/login", {"username": "alice", "password": SECRET})
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(  # noqa: S310
            f"{server.url}/healthz/x?token={tokens['access_token']}", timeout=10
        )
    assert server.stop(signal.SIGINT) == 0
    output = server.output()
    assert "DEBUG" in output
    with closing(sqlite3.connect(config.database.path)) as conn:
        (secret_key,) = conn.execute("SELECT value FROM meta WHERE key = 'secret_key'").fetchone()
        (password_hash,) = conn.execute("SELECT password_hash FROM users").fetchone()
    for secret in (
        PASSWORD,
        SECRET,
        tokens["access_token"],
        tokens["refresh_token"],
        refreshed["access_token"],
        secret_key,
        password_hash,
    ):
        assert secret not in output
