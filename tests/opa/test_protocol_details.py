"""Contract revision 2, protocol items of issue 10: numbers that overflow a double
(item 2), empty `since=`, absolute URLs from `server.public_url`, RFC 6750
`invalid_token`, a version-free `Server` header (item 15), and /healthz (section 8)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync import __version__
from tests.conftest import MakeConfig, bearer, login, with_accounts
from tests.support.sync_helpers import action, get_json, post_batch

PUBLIC = "https://pods.example.org"


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1" + "0" * 400, "-" + "9" * 320])
async def test_a_number_that_overflows_a_double_is_a_400_at_input(
    client: TestClient[Any, Any], alice: str, number: str
) -> None:
    # Item 2: a rejected action echoed its data, and 1e400 came back as `Infinity`.
    sent = action("subscribe", occurred_at="yesterday", feed_url="https://a.example/f")
    text = json.dumps({"requests": [sent]}).replace('"data": {', f'"data": {{"x": {number}, ', 1)
    response = await client.post(
        "/api/v1/sync",
        data=text,
        headers={**bearer(alice), "Content-Type": "application/json"},
    )
    body = await response.text()
    assert response.status == 400, body
    assert "does not fit a double" in json.loads(body)["description"]


async def test_numbers_a_double_holds_still_pass(client: TestClient[Any, Any], alice: str) -> None:
    sent = action("subscribe", occurred_at="yesterday", feed_url="https://a.example/f")
    sent["data"]["x"] = 1.7e308
    sent["data"]["y"] = 2**53
    body = await post_batch(client, alice, [sent])
    assert body["results"][0]["status"] == "rejected"
    assert body["results"][0]["data"]["x"] == 1.7e308


@pytest.mark.parametrize("path", ["/api/v1/subscriptions", "/api/v1/sync"])
async def test_an_empty_since_is_the_same_as_none(
    client: TestClient[Any, Any], alice: str, path: str
) -> None:
    await post_batch(client, alice, [action(feed_url="https://a.example/f")])
    with_empty = await get_json(client, alice, f"{path}?since=&include_own=true")
    without = await get_json(client, alice, f"{path}?include_own=true")
    assert with_empty["results"] == without["results"]
    assert len(with_empty["results"]) == 1


async def test_every_returned_url_is_absolute_with_public_url(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    from podsync.web.app import create_app

    config = make_config(server={"public_url": PUBLIC + "/"})
    await with_accounts(config, lambda a: a.add_user("alice", "correct horse battery"))
    client = await aiohttp_client(create_app(config))
    tokens = await login(client)
    assert tokens["refresh_endpoint"] == PUBLIC + "/auth/refresh"
    token = tokens["access_token"]
    feeds = [action(feed_url=f"https://a.example/{i}") for i in range(3)]
    await post_batch(client, token, feeds)
    first = await get_json(client, token, "/api/v1/subscriptions?limit=1")
    assert first["next_cursor"].startswith(PUBLIC + "/api/v1/subscriptions?since=")
    second = await get_json(client, token, first["next_cursor"][len(PUBLIC) :])
    assert second["prev_cursor"].startswith(PUBLIC + "/api/v1/subscriptions?since=")
    changes = await get_json(client, token, "/api/v1/sync")
    assert changes["next_since"].startswith(PUBLIC + "/api/v1/sync?since=")
    document = await (await client.get("/api/v1/openapi.json")).json()
    assert document["servers"] == [{"url": PUBLIC + "/"}]


async def test_a_sent_but_invalid_token_gets_error_invalid_token(
    client: TestClient[Any, Any], alice: str
) -> None:
    forged = await client.get("/api/v1/subscriptions", headers=bearer(alice[:-2] + "xx"))
    assert forged.status == 401
    assert 'error="invalid_token"' in forged.headers["WWW-Authenticate"]
    # No token at all: a bare challenge (RFC 6750 3.1: no error code).
    missing = await client.get("/api/v1/subscriptions")
    assert missing.status == 401
    assert missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert "error=" not in missing.headers["WWW-Authenticate"]


async def test_the_server_header_names_no_version(client: TestClient[Any, Any]) -> None:
    for response in (await client.get("/healthz"), await client.get("/nowhere")):
        assert response.headers["Server"] == "podsync"


async def test_healthz_reports_status_and_version(client: TestClient[Any, Any]) -> None:
    response = await client.get("/healthz")
    assert response.status == 200
    assert await response.json() == {"status": "ok", "version": __version__}
    head = await client.head("/healthz")
    assert head.status == 200
    assert await head.read() == b""
