"""GET and HEAD /healthz: does the database answer and accept writes? (contract 8)"""

from __future__ import annotations

import logging

from aiohttp import web

from podsync import __version__
from podsync.errors import Unavailable
from podsync.storage.engine import database_errors
from podsync.storage.errors import RETRY_AFTER_DOWN
from podsync.web.http import json_ok
from podsync.web.keys import SERVICES

log = logging.getLogger("podsync.web")


async def healthz(request: web.Request) -> web.Response:
    try:
        await request.app[SERVICES].health.check()
    except Unavailable as exc:
        reason, retry_after = exc.reason, exc.retry_after
    except database_errors() as exc:
        log.error("health check failed: %s", exc)
        reason, retry_after = "the database does not answer", RETRY_AFTER_DOWN
    else:
        return json_ok({"status": "ok", "version": __version__})
    log.warning("health check: %s", reason)
    body = {"status": "unavailable", "version": __version__, "reason": reason}
    response = json_ok(body, 503)
    response.headers["Retry-After"] = str(retry_after)  # as every other 503
    return response
