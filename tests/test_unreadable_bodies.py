"""A body that does not decode as its headers say (a Content-Encoding of gzip or
deflate over bytes that are not) is a 400 on every route that reads one: the JSON
error shape on the APIs, the error page in the web UI. Nothing is stored. A body
that is gzip, as it says, is read as usual."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable

import pytest

from podsync.config import Config
from tests.conftest import PASSWORD, ServeProcess
from tests.gpodder_support import call
from tests.replica_http import basic_header

FEED = "http://bodies.example/feed"
BASIC = {"Authorization": basic_header("alice", PASSWORD)}
JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
MESSAGE = "request body could not be read: it does not decode as its headers say"


@pytest.fixture
def server(
    config: Config, seeded_users: tuple[str, ...], serve_process: Callable[..., ServeProcess]
) -> ServeProcess:
    return serve_process(config)


def token(base: str) -> str:
    body = json.dumps({"username": "alice", "password": PASSWORD}).encode()
    answer = call(base, "POST", "/auth/login", body, **JSON)
    assert answer.status == 200, answer.body
    value: str = answer.json()["access_token"]
    return value


def api_routes(base: str) -> list[tuple[str, str, dict[str, str]]]:
    bearer = {"Authorization": f"Bearer {token(base)}", **JSON}
    return [
        ("POST", "/api/2/episodes/alice.json", BASIC),
        ("PUT", "/subscriptions/alice/phone.json", BASIC),
        ("PUT", "/subscriptions/alice/phone.opml", BASIC),
        ("PUT", "/subscriptions/alice/phone.txt", BASIC),
        ("POST", "/api/2/subscriptions/alice/phone.json", BASIC),
        ("POST", "/api/2/devices/alice/phone.json", BASIC),
        ("POST", "/api/2/sync-devices/alice.json", BASIC),
        ("POST", "/api/v1/sync", bearer),
        ("POST", "/auth/login", JSON),
        ("POST", "/auth/refresh", JSON),
    ]


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_an_api_body_that_does_not_decode_is_a_400_and_stores_nothing(
    server: ServeProcess, encoding: str
) -> None:
    for method, path, headers in api_routes(server.url):
        answer = call(
            server.url, method, path, b"not compressed", **headers, **{"Content-Encoding": encoding}
        )
        assert answer.status == 400, (path, answer.body)
        assert answer.json() == {"error": "Bad request", "description": MESSAGE}, path
    listed = call(server.url, "GET", "/subscriptions/alice.txt", **BASIC)
    assert (listed.status, listed.body) == (200, b"")
    # Nor a traceback: not podsync's, nor aiohttp's as it reads the rest of the body.
    assert "Traceback" not in server.output()


def test_a_web_ui_form_that_does_not_decode_is_the_error_page(server: ServeProcess) -> None:
    body = f"username=alice&password={PASSWORD}".encode()
    refused = call(server.url, "POST", "/ui/login", body, **FORM, **{"Content-Encoding": "gzip"})
    assert refused.status == 400, refused.body
    assert b"The form could not be read. Nothing was changed." in refused.body
    assert "Set-Cookie" not in refused.headers
    signed_in = call(
        server.url, "POST", "/ui/login", gzip.compress(body), **FORM, **{"Content-Encoding": "gzip"}
    )
    assert signed_in.status == 303, signed_in.body
    assert "Traceback" not in server.output()


def test_a_gzip_body_that_is_gzip_is_read(server: ServeProcess) -> None:
    body = gzip.compress(json.dumps([FEED]).encode())
    put = call(
        server.url,
        "PUT",
        "/subscriptions/alice/phone.json",
        body,
        **BASIC,
        **{"Content-Encoding": "gzip"},
    )
    assert put.status == 200, put.body
    listed = call(server.url, "GET", "/subscriptions/alice.txt", **BASIC)
    assert listed.body == f"{FEED}\n".encode()
