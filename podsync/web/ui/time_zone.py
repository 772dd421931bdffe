"""The Account page's time zone: each person reads times in their own zone (the
server's `ui.time_zone` until they choose one). A name the zone database does not
know stores nothing: the browser is sent back to the Account page at the field
(POST, redirect, GET: a reload does not send the form again), where the name typed
and the problem are shown."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from aiohttp import web

from podsync.errors import InvalidInput
from podsync.services.accounts import checked_time_zone
from podsync.services.auth import loggable_name
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import ACCOUNTS, SIGNED_IN

log = logging.getLogger("podsync.ui")
FIELD = "time_zone"
REFUSED = "refused_zone"  # the query parameter of the name refused
MAX_KEPT = 80  # characters of a refused name carried back (a zone name is shorter)


def refused_zone(request: web.Request) -> tuple[dict[str, str], str | None]:
    """The Account page after a refused time zone: the problem at the field, and the
    name as typed (none: no refusal)."""
    if REFUSED not in request.query:
        return {}, None
    value = request.query[REFUSED][:MAX_KEPT]
    try:
        checked_time_zone(value)
    except InvalidInput as exc:
        return {FIELD: str(exc)}, value
    return {}, None  # known after all (a page kept open across an upgrade)


async def set_time_zone(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    value = form_text(request, FIELD, 256)
    try:
        stored = await request.app[ACCOUNTS].set_time_zone(user, value)
    except InvalidInput:
        query = urlencode({REFUSED: value[:MAX_KEPT]})
        raise web.HTTPSeeOther(f"/ui/account?{query}#f-{FIELD}") from None
    log.info(
        "user %s set their time zone to %s in the web UI",
        loggable_name(user.name),
        stored or "the server's",
    )
    raise web.HTTPSeeOther("/ui/account?done=zone")
