"""The Account page's time zone: each person reads times in their own zone (the
server's `ui.time_zone` until they choose one). A name the zone database does not
know is the form back with the problem named; nothing is stored then."""

from __future__ import annotations

import logging

from aiohttp import web

from podsync.errors import InvalidInput
from podsync.services.auth import loggable_name
from podsync.web.ui.app_passwords import account_page
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import ACCOUNTS, SIGNED_IN

log = logging.getLogger("podsync.ui")
FIELD = "time_zone"


async def set_time_zone(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    value = form_text(request, FIELD, 256)
    try:
        stored = await request.app[ACCOUNTS].set_time_zone(user, value)
    except InvalidInput as exc:
        return await account_page(request, {FIELD: str(exc)}, 400, zone_value=value)
    log.info(
        "user %s set their time zone to %s in the web UI",
        loggable_name(user.name),
        stored or "the server's",
    )
    raise web.HTTPSeeOther("/ui/account?done=zone")
