"""GET /healthz: is the database answering?"""

from __future__ import annotations

import logging
import sqlite3

from aiohttp import web

from podsync.store import meta
from podsync.web.http import json_error, json_ok
from podsync.web.keys import DB

log = logging.getLogger("podsync.web")


async def healthz(request: web.Request) -> web.Response:
    try:
        async with request.app[DB].read() as conn:
            await meta.ping(conn)
    except sqlite3.Error as exc:
        log.error("health check failed: %s", exc)
        return json_error(500, "the database does not answer")
    return json_ok({"status": "ok"})
