"""GET /api/v1/subscriptions.opml: the caller's feeds as an OPML 2.0 document,
streamed in pieces so that a huge list never holds the event loop."""

from __future__ import annotations

from aiohttp import web

from podsync.web import params
from podsync.web.http import stream_chunks
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
    return await stream_chunks(
        request, response, service.export_chunks(request[USER], include_unsubscribed)
    )
