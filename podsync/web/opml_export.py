"""GET /api/v1/subscriptions.opml: the caller's feeds as an OPML 2.0 document."""

from __future__ import annotations

from aiohttp import web

from podsync.services.opml_io import OpmlService
from podsync.web import params
from podsync.web.keys import DB, SYNC, USER

OPML_CONTENT_TYPE = "text/x-opml"


async def export_subscriptions(request: web.Request) -> web.Response:
    include_unsubscribed = params.boolean(request, "include_unsubscribed")
    service = OpmlService(request.app[DB], request.app[SYNC])
    document = await service.export(request[USER], include_unsubscribed)
    return web.Response(
        body=document,
        content_type=OPML_CONTENT_TYPE,
        charset="utf-8",
        headers={"Content-Disposition": 'attachment; filename="subscriptions.opml"'},
    )
