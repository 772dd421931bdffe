"""The Import and export page: the OPML import's report kept for the GET that follows
its POST, and the imports from another server (the one running, or the last one's
report), read from the database."""

from __future__ import annotations

import json

from aiohttp import web

from podsync.services.remote_import.client import APIS
from podsync.services.remote_import.jobs import ImportJob
from podsync.web.keys import CONFIG
from podsync.web.ui.keys import IMPORT_JOBS, SIGNED_IN, WEB_SESSIONS
from podsync.web.ui.render import Moment, render, user_zone

UPLOAD_MAX_MIB = 10  # an OPML of 20,000 feeds is ~3 MiB


async def transfer(request: web.Request) -> web.Response:
    report = None
    if request.query.get("done") == "imported":  # after an OPML upload's redirect
        kept = await request.app[WEB_SESSIONS].import_report(request[SIGNED_IN].session)
        report = json.loads(kept) if kept else None
    return await transfer_page(request, {}, report=report)


async def transfer_page(
    request: web.Request,
    errors: dict[str, str],
    report: object = None,
    status: int = 200,
    remote: dict[str, str] | None = None,
) -> web.Response:
    """The page; `report` of an OPML import (as `account._report_json` keeps it),
    `remote` the import form's values."""
    user = request[SIGNED_IN].user
    return render(
        request,
        "transfer.html",
        "Import and export",
        status=status,
        errors=errors,
        report=report,
        max_mib=UPLOAD_MAX_MIB,
        remote=remote or {},
        apis=APIS,
        private_ok=user.admin and not request.app[CONFIG].feeds.allow_private,
        **await _remote_import(request),
    )


async def _remote_import(request: web.Request) -> dict[str, object]:
    """What the page shows of the import from another server: the one named in the
    query (after the form's redirect), else the user's last one."""
    jobs = request.app[IMPORT_JOBS]
    user_id = request[SIGNED_IN].user.id
    raw = request.query.get("import", "")
    job: ImportJob | None
    if raw:
        number = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 18 else 0
        job = await jobs.get(user_id, number) if number else None
        if job is None:
            return {"job": None, "job_gone": True}
    else:
        job = await jobs.latest(user_id)
    tz = user_zone(request)
    started = Moment(job.started_at, tz) if job is not None else None
    return {"job": job, "job_gone": False, "job_started": started}
