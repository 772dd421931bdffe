"""Feeds' artwork as podsync keeps it (services/feeds/artwork.py), served from its own
address so that a page makes the browser contact no other host: `/ui/artwork/<the
SHA-256 of the image>`. The address names the bytes, so they never change under it:
the browser keeps an image a year and asks again only with If-None-Match (a 304).
Signed-in people only, as every UI page, and only an image of one of their own
podcasts: a hash no image has, and an image only others' podcasts have, are the same
plain 404 (the page's letter tile shows through), so hashing a podcast's public
artwork tells nobody whether someone on the server subscribes to it."""

from __future__ import annotations

import re

from aiohttp import web

from podsync.web.keys import FEED_INFO
from podsync.web.ui.keys import SIGNED_IN

_HASH = re.compile(r"[0-9a-f]{64}")
PREFIX = "/ui/artwork/"
HEADERS = {
    # Private: behind the sign-in. A year, and immutable: the address is the content.
    "Cache-Control": "private, max-age=31536000, immutable",
    "X-Content-Type-Options": "nosniff",
    # Opened on its own, an image runs nothing and is nobody's frame.
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def artwork_path(digest: str | None) -> str | None:
    """Where a page loads a kept image from (None: no image, the letter tile)."""
    return f"{PREFIX}{digest}" if digest else None


async def artwork(request: web.Request) -> web.Response:
    digest = request.match_info["digest"]
    etag = f'"{digest}"'
    if _HASH.fullmatch(digest) is None:
        return _missing()
    user = request[SIGNED_IN].user
    found = await request.app[FEED_INFO].artwork(user.id, digest)
    if found is None:
        return _missing()
    content_type, body = found
    if etag in request.headers.get("If-None-Match", "").replace(" ", "").split(","):
        return web.Response(status=304, headers={**HEADERS, "ETag": etag})
    return web.Response(body=body, content_type=content_type, headers={**HEADERS, "ETag": etag})


def _missing() -> web.Response:
    return web.Response(
        status=404,
        text="no such image",
        headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
    )
