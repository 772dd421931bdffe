"""Transport rules of the gpodder layer (gpodder spec section 2): exactly 200, no
redirect anywhere, `//` routed, Cache-Control, the gpodder.enabled switch."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import raw_http
from tests.support.gpodder_support import GpWith, basic

AUTH_LINE = basic()["Authorization"]


async def _raw(gp: TestClient[Any, Any], method: str, path: str, body: bytes = b"") -> bytes:
    assert gp.port is not None
    request = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {AUTH_LINE}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    return await raw_http(gp.port, request)


async def test_a_double_slash_is_routed_without_a_redirect(gp: TestClient[Any, Any]) -> None:
    # Kasts with a trailing "/" in its server setting.
    answer = await _raw(gp, "GET", "//api/2/devices/alice.json")
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert answer.endswith(b"[]")
    answer = await _raw(gp, "POST", "//api/2/devices/alice/phone.json", b'{"type":"mobile"}')
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    answer = await _raw(gp, "GET", "//api/2/episodes/alice.json?since=0")
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert b'"actions":[]' in answer


async def test_nothing_under_the_prefixes_redirects(gp: TestClient[Any, Any]) -> None:
    paths = [
        "/api/2/devices/alice.json/",
        "/api/2/devices/alice",
        "/api/2/devices/alice/",
        "/api/2/",
        "/api/2",
        "/subscriptions/alice/",
        "/subscriptions/",
        "/api/2/directory/x.json",
        "/api/2/toplist/10.json",
        "/api/2/updates/alice/dev.json",
        "/api/2/settings/alice/account.json",
        "/index.php/apps/gpoddersync/nothing",
        "///api/2/devices/alice.json/",
        "/api//2/directory//x.json",
    ]
    for path in paths:
        for method in ("GET", "POST"):
            answer = await _raw(gp, method, path)
            status = int(answer.split(b" ", 2)[1])
            assert not 300 <= status < 400, (method, path, answer[:200])
            assert status in (404, 405), (method, path, answer[:200])


async def test_every_answer_says_no_store(gp: TestClient[Any, Any]) -> None:
    for method, path in [
        ("GET", "/api/2/devices/alice.json"),
        ("GET", "/api/2/devices/bob.json"),
        ("POST", "/api/2/auth/alice/login.json"),
    ]:
        response = await gp.request(method, path, headers=basic())
        assert response.headers.get("Cache-Control") == "no-store", (method, path)


async def test_disabled_layer_answers_404_everywhere(gp_with: GpWith) -> None:
    gp = await gp_with(gpodder={"enabled": False})
    for method, path in [
        ("POST", "/api/2/auth/alice/login.json"),
        ("GET", "/api/2/devices/alice.json"),
        ("GET", "/api/2/episodes/alice.json"),
        ("GET", "/subscriptions/alice.opml"),
    ]:
        response = await gp.request(method, path, headers=basic())
        assert response.status == 404, (method, path)
    # The OPA API is untouched.
    assert (
        await gp.post("/auth/login", json={"username": "alice", "password": "x" * 8})
    ).status == 401
