"""The reports of finished imports from another server, kept for the GET that
follows their POST (the Import and export page shows them)."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict

from podsync.services.remote_import import RemoteImportReport

KEEP_S = 3600.0  # how long a report can be shown again
KEEP_MAX = 200  # reports kept at most (the oldest go first)


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
