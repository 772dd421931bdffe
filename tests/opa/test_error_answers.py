"""One table (web/errors.py `ANSWERS`) says what each domain error becomes: every
row is answered with its status, the JSON error shape and, for 429 and 503, a
Retry-After; a gpodder or Nextcloud refusal with their Basic challenge. The
middleware recognises no protocol by its route name: a protocol marks the handlers
that check their own callers, and every other route stays protected."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.errors import Forbidden, PodsyncError, TooManyRequests, Unauthorized, Unavailable
from podsync.web.errors import ANSWERS, basic_refusal
from podsync.web.http import error_name
from podsync.web.middleware import checks_own_callers
from tests.conftest import app_with_test_routes

MIDDLEWARE = Path(__file__).resolve().parents[2] / "podsync" / "web" / "middleware.py"


def _example(kind: type[PodsyncError]) -> PodsyncError:
    if kind in (TooManyRequests, Unavailable):
        return kind("try later", 7)  # type: ignore[call-arg]
    return kind(f"a {kind.__name__}")


def _raiser(exc: PodsyncError) -> Any:
    async def handler(request: web.Request) -> web.Response:
        raise exc

    return checks_own_callers(handler)  # no token needed: the answer is what is tested


async def test_every_row_of_the_table_is_answered_as_it_says(
    aiohttp_client: Any, config: Config
) -> None:
    app = app_with_test_routes(config)
    for n, (kind, _) in enumerate(ANSWERS):
        app.router.add_get(f"/api/test/raise/{n}", _raiser(_example(kind)), allow_head=False)
    client: TestClient[Any, Any] = await aiohttp_client(app)
    for n, (kind, answer) in enumerate(ANSWERS):
        response = await client.get(f"/api/test/raise/{n}")
        assert response.status == answer.status, kind
        body = await response.json()
        assert body == {"error": error_name(answer.status), "description": str(_example(kind))}
        assert ("Retry-After" in response.headers) == (kind in (TooManyRequests, Unavailable))
        if kind is Unauthorized:
            assert response.headers["WWW-Authenticate"] == 'Bearer realm="podsync"'


def test_gpodder_and_nextcloud_refusals_come_from_the_table() -> None:
    challenge = 'Basic realm="podsync", charset="UTF-8"'
    refused = basic_refusal(Unauthorized("who are you"), challenge)
    assert (refused.status, refused.headers["WWW-Authenticate"]) == (401, challenge)
    forbidden = basic_refusal(Forbidden("not from there"), challenge)
    assert forbidden.status == 403 and "WWW-Authenticate" not in forbidden.headers


def test_the_middleware_reads_no_route_name() -> None:
    tree = ast.parse(MIDDLEWARE.read_text())
    names = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "name"
    ]
    assert names == []
