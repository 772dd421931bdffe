"""GET /api/v1/openapi.json: the OpenAPI 3.1 document shipped beside this module,
with this podsync's version and the limits this server is configured with filled in."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from aiohttp import web

from podsync import __version__
from podsync.config import SyncConfig
from podsync.web.keys import CONFIG


@cache
def document_bytes(page_size_max: int = SyncConfig().page_size_max) -> bytes:
    """The document as served when `sync.page_size_max` is `page_size_max`."""
    text = resources.files("podsync.web").joinpath("openapi.json").read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    document["info"]["version"] = __version__  # the package's, not the file's
    for operation in (op for path in document["paths"].values() for op in path.values()):
        for parameter in operation.get("parameters", ()):
            if parameter["in"] == "query" and parameter["name"] == "limit":
                parameter["schema"]["maximum"] = page_size_max
    return json.dumps(document, indent=2).encode("utf-8")


async def openapi(request: web.Request) -> web.Response:
    body = document_bytes(request.app[CONFIG].sync.page_size_max)
    return web.Response(body=body, content_type="application/json")
