"""The Import and export page, and the reports of imports from another server kept
for the GET that follows their POST."""

from __future__ import annotations

import json

from aiohttp import web

from podsync.services.remote_import.client import APIS
from podsync.web.ui.keys import IMPORT_REPORTS, SIGNED_IN, WEB_SESSIONS
from podsync.web.ui.render import render

UPLOAD_MAX_MIB = 10  # an OPML of 20,000 feeds is ~3 MiB


async def transfer(request: web.Request) -> web.Response:
    report = None
    if request.query.get("done") == "imported":  # after an OPML upload's redirect
        kept = await request.app[WEB_SESSIONS].import_report(request[SIGNED_IN].session)
        report = json.loads(kept) if kept else None
    return transfer_page(request, {}, report=report)


def transfer_page(
    request: web.Request,
    errors: dict[str, str],
    report: object = None,
    status: int = 200,
    remote: dict[str, str] | None = None,
) -> web.Response:
    """The page; `report` of an OPML import (as `account._report_json` keeps it),
    `remote` the import form's values."""
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
        **_remote_report(request),
    )


def _remote_report(request: web.Request) -> dict[str, object]:
    """What the page shows of this form on a GET: the report named in the query."""
    key = request.query.get("imported")
    if key is None:
        return {"remote_report": None, "remote_gone": False}
    report = request.app[IMPORT_REPORTS].find(request[SIGNED_IN].user.id, key[:64])
    return {"remote_report": report, "remote_gone": report is None}
