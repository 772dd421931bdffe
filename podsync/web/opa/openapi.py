"""GET /api/v1/openapi.json: the OpenAPI 3.1 document shipped beside this module,
with this podsync's version and the limits this server is configured with filled in."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from aiohttp import web

from podsync import __version__
from podsync.config import SyncConfig
from podsync.web.keys import CONFIG


@cache
def document_bytes(page_size_max: int = SyncConfig().page_size_max, public_url: str = "") -> bytes:
    """The document as served when `sync.page_size_max` is `page_size_max` and
    `server.public_url` is `public_url`. (importlib.resources loads with the first
    request for it: an idle server never reads the file.)"""
    from importlib import resources

    text = resources.files("podsync.web.opa").joinpath("openapi.json").read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    document["info"]["version"] = __version__  # the package's, not the file's
    for operation in (op for path in document["paths"].values() for op in path.values()):
        for parameter in operation.get("parameters", ()):
            if parameter["in"] == "query" and parameter["name"] == "limit":
                parameter["schema"]["maximum"] = page_size_max
    if public_url:
        document["servers"] = [{"url": public_url.rstrip("/") + "/"}]
    return json.dumps(document, indent=2).encode("utf-8")


async def openapi(request: web.Request) -> web.Response:
    config = request.app[CONFIG]
    body = document_bytes(config.sync.page_size_max, config.server.public_url)
    return web.Response(body=body, content_type="application/json")
