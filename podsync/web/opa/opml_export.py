"""GET /api/v1/subscriptions.opml: the caller's feeds as an OPML 2.0 document,
streamed in pieces so that a huge list never holds the event loop."""

from __future__ import annotations

import asyncio

from aiohttp import web

from podsync.web import params
from podsync.web.keys import SERVICES, USER

OPML_CONTENT_TYPE = "text/x-opml"


async def export_subscriptions(request: web.Request) -> web.StreamResponse:
    include_unsubscribed = params.boolean(request, "include_unsubscribed")
    service = request.app[SERVICES].opml  # opml_io loads with the first export
    response = web.StreamResponse(
        headers={"Content-Disposition": 'attachment; filename="subscriptions.opml"'}
    )
    response.content_type = OPML_CONTENT_TYPE
    response.charset = "utf-8"
    chunks = service.export_chunks(request[USER], include_unsubscribed)
    # The first piece reads the database: a fault there is still a 503, not a 200
    # cut short.
    first = await anext(chunks)
    await response.prepare(request)
    await response.write(first)
    async for chunk in chunks:
        await response.write(chunk)
        # Reads run on the loop and a write returns at once while the socket buffer
        # has room, so nothing above yields: let the other requests in between pieces.
        await asyncio.sleep(0)
    await response.write_eof()
    return response
