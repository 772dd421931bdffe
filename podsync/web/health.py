"""GET and HEAD /healthz: does the database answer and accept writes? (contract 8)"""

from __future__ import annotations

import logging

from aiohttp import web

from podsync import __version__
from podsync.errors import Unavailable
from podsync.services.health import HealthService
from podsync.storage.engine import DATABASE_ERRORS
from podsync.web.http import json_ok
from podsync.web.keys import DB

log = logging.getLogger("podsync.web")


async def healthz(request: web.Request) -> web.Response:
    try:
        await HealthService(request.app[DB]).check()
    except Unavailable as exc:
        reason = exc.reason
    except DATABASE_ERRORS as exc:
        log.error("health check failed: %s", exc)
        reason = "the database does not answer"
    else:
        return json_ok({"status": "ok", "version": __version__})
    log.warning("health check: %s", reason)
    return json_ok({"status": "unavailable", "version": __version__, "reason": reason}, 503)
