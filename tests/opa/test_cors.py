"""Contract section 12 (rev. 2): CORS only for the configured origins."""

from __future__ import annotations

from typing import Any

from podsync.web.app import create_app
from tests.conftest import MakeConfig, bearer

APP = "https://app.example.org"
PREFLIGHT = {
    "Origin": APP,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type, client-id",
}


async def test_no_cors_header_without_configured_origins(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    client = await aiohttp_client(create_app(make_config()))
    response = await client.get("/healthz", headers={"Origin": APP})
    assert not [h for h in response.headers if h.lower().startswith("access-control-")]
    preflight = await client.options("/api/v1/sync", headers=PREFLIGHT)
    assert preflight.status == 405
    assert "Access-Control-Allow-Origin" not in preflight.headers


async def test_a_configured_origin_gets_preflight_and_headers_on_every_answer(
    aiohttp_client: Any, make_config: MakeConfig, create_user: Any
) -> None:
    config = make_config(server={"cors_origins": [APP, "http://localhost:5173"]})
    client = await aiohttp_client(create_app(config))
    preflight = await client.options("/api/v1/sync", headers=PREFLIGHT)
    assert preflight.status == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == APP
    allowed = {
        h.strip().lower() for h in preflight.headers["Access-Control-Allow-Headers"].split(",")
    }
    assert allowed == {
        "authorization",
        "content-type",
        "client-id",
        "x-request-id",
        "if-none-match",
    }
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    assert "Origin" in preflight.headers.getall("Vary")
    assert preflight.headers["X-Request-ID"]
    # The real request, and an error (401) the app's script must be able to read.
    unauthorized = await client.get("/api/v1/subscriptions", headers={"Origin": APP})
    assert unauthorized.status == 401
    assert unauthorized.headers["Access-Control-Allow-Origin"] == APP
    assert "X-Request-ID" in unauthorized.headers["Access-Control-Expose-Headers"]
    await create_user("alice")
    login = await client.post(
        "/auth/login",
        json={"username": "alice", "password": "correct horse battery"},
        headers={"Origin": APP},
    )
    assert login.status == 200
    assert login.headers["Access-Control-Allow-Origin"] == APP
    token = (await login.json())["access_token"]
    listed = await client.get("/api/v1/subscriptions", headers={"Origin": APP, **bearer(token)})
    assert listed.status == 200
    assert listed.headers["Access-Control-Allow-Origin"] == APP
    assert "ETag" in listed.headers["Access-Control-Expose-Headers"]
    assert "Access-Control-Allow-Credentials" not in listed.headers


async def test_another_origin_gets_no_cors_header(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    client = await aiohttp_client(create_app(make_config(server={"cors_origins": [APP]})))
    other = {**PREFLIGHT, "Origin": "https://evil.example"}
    preflight = await client.options("/api/v1/sync", headers=other)
    assert preflight.status == 405
    assert "Access-Control-Allow-Origin" not in preflight.headers
    response = await client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in response.headers
    assert "Origin" in response.headers.getall("Vary")


async def test_a_star_allows_every_origin(aiohttp_client: Any, make_config: MakeConfig) -> None:
    client = await aiohttp_client(create_app(make_config(server={"cors_origins": ["*"]})))
    preflight = await client.options(
        "/auth/login", headers={**PREFLIGHT, "Origin": "https://any.example"}
    )
    assert preflight.status == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    response = await client.get("/healthz", headers={"Origin": "https://any.example"})
    assert response.headers["Access-Control-Allow-Origin"] == "*"
