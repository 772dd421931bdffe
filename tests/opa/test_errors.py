"""Contract section 8: every failure is the JSON error shape with an X-Request-ID."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from podsync.web.http import ERROR_NAMES
from podsync.web.keys import DB
from tests.conftest import BOOM, PASSWORD, WHOAMI, MakeConfig, app_with_test_routes, bearer, login

FRESH_ID = re.compile(r"[0-9a-f]{32}")
JSON = {"Content-Type": "application/json"}


async def assert_error(response: ClientResponse, status: int) -> dict[str, Any]:
    assert response.status == status, await response.text()
    assert response.headers["Content-Type"].startswith("application/json")
    body: dict[str, Any] = await response.json()
    assert set(body) == {"error", "description"}
    assert body["error"] == ERROR_NAMES[status]
    assert isinstance(body["description"], str)
    assert body["description"]
    assert response.headers["X-Request-ID"]
    return body


def test_error_names_are_the_contracts_list() -> None:
    assert set(ERROR_NAMES.values()) == {
        "Bad request",
        "Unauthorized",
        "Forbidden",
        "Not found",
        "Method not allowed",
        "Payload too large",
        "Too many requests",
        "Internal server error",
        "Service unavailable",
    }


async def test_healthz_needs_no_token(api: TestClient[Any, Any]) -> None:
    response = await api.get("/healthz")
    assert response.status == 200
    assert response.content_type == "application/json"
    assert (await response.json())["status"] == "ok"
    assert FRESH_ID.fullmatch(response.headers["X-Request-ID"])


async def test_healthz_when_the_database_does_not_answer_is_a_500(
    api: TestClient[Any, Any],
) -> None:
    await api.app[DB].close()
    await assert_error(await api.get("/healthz"), 500)


@pytest.mark.parametrize(
    "path", ["/nope", "/api/v1/nope", "/auth/nope", "/api", "/healthz/x", "/%ff", "/auth/login/"]
)
async def test_unknown_path_is_404_even_without_a_token(
    api: TestClient[Any, Any], path: str
) -> None:
    body = await assert_error(await api.get(path, allow_redirects=False), 404)
    assert "no such resource" in body["description"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/auth/login", "POST"),
        ("PUT", "/auth/refresh", "POST"),
        ("DELETE", "/healthz", "GET,HEAD"),
        ("POST", "/healthz", "GET,HEAD"),
        ("PATCH", WHOAMI, "GET"),
    ],
)
async def test_wrong_method_is_405_with_allow(
    api: TestClient[Any, Any], method: str, path: str, allowed: str
) -> None:
    response = await api.request(method, path)
    assert response.status == 405
    assert response.headers["Allow"] == allowed
    assert response.headers["X-Request-ID"]
    if method != "HEAD":
        body = await assert_error(response, 405)
        assert method in body["description"]


async def test_body_larger_than_max_body_bytes_is_413(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    client = await aiohttp_client(
        app_with_test_routes(make_config(server={"max_body_bytes": 1024}))
    )
    body = '{"username": "alice", "password": "' + "x" * 1100 + '"}'
    response = await client.post("/auth/login", data=body, headers=JSON)
    error = await assert_error(response, 413)
    assert "1024" in error["description"]

    async def chunks() -> Any:  # no Content-Length: the limit holds while reading
        for _ in range(4):
            yield b"x" * 512

    response = await client.post("/auth/refresh", data=chunks(), headers=JSON)
    await assert_error(response, 413)
    fits = await client.post("/auth/refresh", json={"refresh_token": "x" * 900})
    assert fits.status == 401


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", '{"username": "a", "password": "b"}'),
        ("application/x-www-form-urlencoded", "username=a&password=b"),
        ("multipart/form-data; boundary=x", "--x--"),
        ("application/jsonx", "{}"),
        (None, '{"username": "a", "password": "b"}'),
    ],
)
async def test_wrong_content_type_is_400(
    api: TestClient[Any, Any], content_type: str | None, body: str
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = await api.post("/auth/login", data=body.encode(), headers=headers)
    error = await assert_error(response, 400)
    assert "Content-Type must be application/json" in error["description"]


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "Application/JSON", "application/json;"]
)
async def test_json_content_type_variants_are_accepted(
    api: TestClient[Any, Any], content_type: str
) -> None:
    body = f'{{"username": "alice", "password": "{PASSWORD}"}}'
    response = await api.post("/auth/login", data=body, headers={"Content-Type": content_type})
    assert response.status == 200


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"", "empty"),
        (b"{", "not valid JSON"),
        (b'{"username": "a",}', "not valid JSON"),
        (b"{'username': 'a'}", "not valid JSON"),
        (b'{"username": NaN}', "not valid JSON"),
        (b'{"username": Infinity}', "not valid JSON"),
        (b'{"n": ' + b"1" * 5000 + b"}", "not valid JSON"),
        (b'{"username": "\xff\xfe"}', "not UTF-8"),
        (b"\xef\xbb\xbf{}", "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
    ],
)
async def test_bad_json_is_400(api: TestClient[Any, Any], body: bytes, words: str) -> None:
    for path in ("/auth/login", "/auth/refresh"):
        response = await api.post(path, data=body, headers=JSON)
        error = await assert_error(response, 400)
        assert words in error["description"]


async def test_unhandled_exception_is_a_bare_500_logged_with_its_request_id(
    api: TestClient[Any, Any], caplog: pytest.LogCaptureFixture
) -> None:
    token = (await login(api))["access_token"]
    with caplog.at_level(logging.ERROR, logger="podsync"):
        response = await api.get(
            BOOM + "?q=1", headers={**bearer(token), "X-Request-ID": "req-500"}
        )
    body = await assert_error(response, 500)
    text = await response.text()
    assert "Traceback" not in text
    assert "boom" not in text
    assert "RuntimeError" not in text
    assert response.headers["X-Request-ID"] == "req-500"
    assert "req-500" in body["description"]
    records = [r for r in caplog.records if "req-500" in r.getMessage()]
    assert len(records) == 1
    assert records[0].exc_info is not None
    assert "boom: forced by the test" in caplog.text
    assert "Traceback" in caplog.text


@pytest.mark.parametrize(
    "request_id",
    ["a", "abc-123", "A.b_c:d-e", "x" * 128, "550e8400-e29b-41d4-a716-446655440000"],
)
async def test_sane_request_id_is_kept(api: TestClient[Any, Any], request_id: str) -> None:
    for response in (
        await api.get("/healthz", headers={"X-Request-ID": request_id}),
        await api.get("/nope", headers={"X-Request-ID": request_id}),
        await api.get(WHOAMI, headers={"X-Request-ID": request_id}),
    ):
        assert response.headers["X-Request-ID"] == request_id


@pytest.mark.parametrize(
    "request_id", ["", " ", "x" * 129, "has space", "a/b", "é", "a\tb", "<script>", "a,b"]
)
async def test_other_request_ids_are_replaced_by_a_fresh_one(
    api: TestClient[Any, Any], request_id: str
) -> None:
    first = await api.get("/healthz", headers={"X-Request-ID": request_id})
    second = await api.get("/healthz", headers={"X-Request-ID": request_id})
    assert FRESH_ID.fullmatch(first.headers["X-Request-ID"])
    assert first.headers["X-Request-ID"] != second.headers["X-Request-ID"]


async def test_every_401_carries_www_authenticate(api: TestClient[Any, Any]) -> None:
    responses = [
        await api.get(WHOAMI),
        await api.get(WHOAMI, headers=bearer("garbage")),
        await api.post("/auth/login", json={"username": "alice", "password": "wrong password"}),
        await api.post("/auth/refresh", json={"refresh_token": "garbage"}),
    ]
    for response in responses:
        await assert_error(response, 401)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_no_redirects_under_api_or_auth(api: TestClient[Any, Any]) -> None:
    for path in ("/auth/login/", "/auth//login", "/api/v1/", "/api/v1", "/AUTH/LOGIN"):
        response = await api.post(path, json={}, allow_redirects=False)
        assert response.status in (401, 404, 405), path
        assert "Location" not in response.headers
