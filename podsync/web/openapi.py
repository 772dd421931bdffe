"""GET /api/v1/openapi.json: the OpenAPI 3.1 document shipped beside this module."""

from __future__ import annotations

from functools import cache
from importlib import resources

from aiohttp import web


@cache
def document_bytes() -> bytes:
    return resources.files("podsync.web").joinpath("openapi.json").read_bytes()


async def openapi(request: web.Request) -> web.Response:
    return web.Response(body=document_bytes(), content_type="application/json")
