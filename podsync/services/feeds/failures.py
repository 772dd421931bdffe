"""The feed fetcher's log lines for failed fetches, and how a feed is named in them.

A few failures are logged a line each, as before. When many feeds fail at once (an
OPML import of thousands of feeds on a host that does not resolve, a server without
Internet access), a line per feed would bury everything else: past the first few in
a period, failures are counted by reason and host and summed up in one line at the
end of the fetcher's pass (or of the period, for a long pass). Each feed's own
reason stays in the database, where the web UI's podcast page shows it; each feed's
line is still logged, at DEBUG.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

# Failures logged a line each per period; the rest of the period's are summed up.
PER_FEED_LINES = 5
PERIOD_S = 60.0
HOSTS_NAMED = 3  # per reason, in a summary line
REASONS_NAMED = 5


def shown(url_key: str) -> str:
    """A url key for a log line: host and path only. A feed URL can carry a user name
    and password (`user:secret@host/feed`) or a token in its query (private feeds:
    `?auth=...`), and neither belongs in a log."""
    cut = _host_end(url_key)
    path = url_key[cut:].split("?", 1)[0]
    return host_of(url_key) + path + ("?..." if "?" in url_key[cut:] else "")


def host_of(url_key: str) -> str:
    """The host (and port) of a url key, without any user name or password."""
    return url_key[: _host_end(url_key)].rpartition("@")[2]


def _host_end(url_key: str) -> int:
    return min((i for i in (url_key.find("/"), url_key.find("?")) if i >= 0), default=len(url_key))


class FailureLog:
    def __init__(self, log: logging.Logger, clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log
        self.clock = clock
        self._lines = 0
        self._held: Counter[tuple[str, str]] = Counter()  # (reason, host) -> feeds
        self._since = clock()

    def failed(self, url_key: str, failures: int, error: str) -> None:
        """One feed's fetch failed (`failures` in a row, this one included)."""
        line = "fetching the feed %s failed (%d in a row): %s"
        if self._lines < PER_FEED_LINES:
            self._lines += 1
            self.log.info(line, shown(url_key), failures, error)
        else:
            self.log.debug(line, shown(url_key), failures, error)
            self._held[(error, host_of(url_key))] += 1
        if self.clock() - self._since >= PERIOD_S:
            self.flush()

    def flush(self) -> None:
        """Sum up the failures not logged a line each, and start a new period."""
        held, self._held = self._held, Counter()
        self._lines = 0
        self._since = self.clock()
        if not held:
            return
        by_reason: dict[str, Counter[str]] = {}
        for (reason, host), count in held.items():
            by_reason.setdefault(reason, Counter())[host] += count
        ranked = sorted(by_reason.items(), key=lambda item: (-item[1].total(), item[0]))
        parts = []
        for reason, hosts in ranked[:REASONS_NAMED]:
            named = ", ".join(f"{host} {n}" for host, n in hosts.most_common(HOSTS_NAMED))
            more = ", ..." if len(hosts) > HOSTS_NAMED else ""
            parts.append(f"{reason}: {hosts.total()} ({named}{more})")
        if len(ranked) > REASONS_NAMED:
            parts.append(f"{len(ranked) - REASONS_NAMED} other reasons")
        self.log.info(
            "fetching %d more feeds failed, by reason and host: %s",
            held.total(),
            "; ".join(parts),
        )
