"""Query parameters shared by the list and change-feed endpoints (contract 4 and 7)."""

from __future__ import annotations

import json
import re
from urllib.parse import urlencode

from aiohttp import web

from podsync.errors import InvalidInput
from podsync.web.keys import CONFIG

_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
_DIGITS = re.compile(r"[0-9]{1,9}", re.ASCII)


def boolean(request: web.Request, name: str, default: bool = False) -> bool:
    raw = request.query.get(name)
    if raw is None:
        return default
    value = _BOOLEANS.get(raw.lower())
    if value is None:
        raise InvalidInput(f"{name} must be true, false, 1 or 0, not {raw!r}")
    return value


def limit(request: web.Request) -> int:
    sync = request.app[CONFIG].sync
    raw = request.query.get("limit")
    if raw is None:
        return sync.page_size_default
    value = int(raw) if _DIGITS.fullmatch(raw) else 0
    if not 1 <= value <= sync.page_size_max:
        raise InvalidInput(f"limit must be an integer from 1 to {sync.page_size_max}, not {raw!r}")
    return value


def since(request: web.Request) -> str | None:
    raw = request.query.get("since")
    if raw == "":
        raise InvalidInput("since must not be empty; omit it to start at the beginning")
    return raw


def relative_url(request: web.Request, since_value: str) -> str:
    """This request's path and parameters as given, with `since` replaced."""
    kept = [(k, v) for k, v in request.query.items() if k != "since"]
    return f"{request.path}?{urlencode([('since', since_value), *kept])}"


def json_url(request: web.Request, since_value: str) -> str:
    """`relative_url` as a JSON string."""
    return json.dumps(relative_url(request, since_value))
