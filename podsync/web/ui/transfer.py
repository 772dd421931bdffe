"""The Import and export page, and the reports of imports from another server kept
for the GET that follows their POST."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict

from aiohttp import web

from podsync.services.remote_import import RemoteImportReport
from podsync.services.remote_import.client import APIS
from podsync.web.ui.keys import IMPORT_REPORTS, SIGNED_IN
from podsync.web.ui.render import render

UPLOAD_MAX_MIB = 10  # an OPML of 20,000 feeds is ~3 MiB
KEEP_S = 3600.0  # how long a report can be shown again
KEEP_MAX = 200  # reports kept at most (the oldest go first)


async def transfer(request: web.Request) -> web.Response:
    return transfer_page(request, {})


def transfer_page(
    request: web.Request,
    errors: dict[str, str],
    report: object = None,
    status: int = 200,
    remote: dict[str, str] | None = None,
) -> web.Response:
    """The page; `report` of an OPML import, `remote` the import form's values."""
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


class ImportReports:
    """Finished imports' reports, by a random id and their user, for the GET after
    the redirect. In memory: a restarted server shows the page without it."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[int, float, RemoteImportReport]] = OrderedDict()

    def keep(self, user_id: int, report: RemoteImportReport) -> str:
        key = secrets.token_urlsafe(16)
        self._kept[key] = (user_id, time.monotonic(), report)
        while len(self._kept) > KEEP_MAX:
            self._kept.popitem(last=False)
        return key

    def find(self, user_id: int, key: str) -> RemoteImportReport | None:
        found = self._kept.get(key)
        if found is None or found[0] != user_id or time.monotonic() - found[1] > KEEP_S:
            return None
        return found[2]


def _remote_report(request: web.Request) -> dict[str, object]:
    """What the page shows of this form on a GET: the report named in the query."""
    key = request.query.get("imported")
    if key is None:
        return {"remote_report": None, "remote_gone": False}
    report = request.app[IMPORT_REPORTS].find(request[SIGNED_IN].user.id, key[:64])
    return {"remote_report": report, "remote_gone": report is None}
