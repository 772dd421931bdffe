"""Logging set-up: plain text lines, or one JSON object a line (`log.format = "json"`).

Request log lines pass their fields (`request_id`, `method`, `path`, `status`,
`duration_ms`, ...) as `extra=`; the text format keeps its message, the JSON format
puts each field in its own key so a log shipper needs no parsing.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

# The text format; the fail2ban filter in the README matches lines of this shape.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# The `extra=` fields a JSON line carries when a record has them.
REQUEST_FIELDS = ("request_id", "client", "method", "path", "status", "bytes", "duration_ms")


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time (RFC 3339 UTC), level, logger, message, the
    request fields present, and the traceback text of an exception."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            # isoformat writes +00:00; the rest of podsync writes Z
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in (*REQUEST_FIELDS, "worker"):
            value = record.__dict__.get(name)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        # ensure_ascii: a lone surrogate or control character from a request stays
        # one valid line.
        return json.dumps(line, ensure_ascii=True)


class AnsweredBodyErrorFilter(logging.Filter):
    """Drops aiohttp's "Unhandled exception" for a request body that does not decode
    (a Content-Encoding that is not what it says): podsync has answered it with 400
    and logged it already, and aiohttp, reading the rest of the body after the
    response, logs a traceback any client could fill the log with."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        kind = type(error)
        return not (
            kind.__name__ == "RequestPayloadError" and kind.__module__.startswith("aiohttp")
        )


FLOOR_WARNING = "Failed to restore the pool connection floor"  # asyncpg/pool.py


class PoolFloorFilter(logging.Filter):
    """asyncpg's pool logs a traceback each time it fails to reopen its floor
    connection in the background (a database server down, closed to connections,
    or refusing a rotated password): requests already answer 503 saying why. Keep
    the warning as one line that names the fault; drop the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and str(record.msg).startswith(FLOOR_WARNING):
            words = " ".join(str(error).split())[:300] or type(error).__name__
            record.msg = f"{record.getMessage()} ({words})"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


class WorkerFilter(logging.Filter):
    """Marks each record with the worker that logged it (`server.workers`): a JSON
    line carries it as `worker`; the text format stays as it is (the fail2ban filter
    in docs/operations.md matches its shape)."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def filter(self, record: logging.LogRecord) -> bool:
        record.worker = self.index
        return True


def mark_worker(index: int) -> None:
    """In a worker process: every line it logs from now on names it."""
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, WorkerFilter)]:
            handler.removeFilter(old)
        handler.addFilter(WorkerFilter(index))


def configure_logging(level: str, fmt: str = "text", **kwargs: Any) -> None:
    handler = logging.StreamHandler(kwargs.pop("stream", None))
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logging.basicConfig(level=getattr(logging, level.upper()), handlers=[handler], **kwargs)
    # aiohttp's own access logger is replaced by ours; keep its noise down.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, AnsweredBodyErrorFilter) for f in server_log.filters):
        server_log.addFilter(AnsweredBodyErrorFilter())
    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, PoolFloorFilter) for f in pool_log.filters):
        pool_log.addFilter(PoolFloorFilter())
