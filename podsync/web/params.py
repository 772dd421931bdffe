"""Query parameters shared by the list and change-feed endpoints (contract 4 and 7)."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from aiohttp import web

from podsync.errors import InvalidInput
from podsync.numbers import parse_int
from podsync.recent import Recent
from podsync.web.keys import CONFIG

_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


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
    value = parse_int(raw, 1, sync.page_size_max)
    if value is None:
        raise InvalidInput(f"limit must be an integer from 1 to {sync.page_size_max}, not {raw!r}")
    return value


def since(request: web.Request) -> str | None:
    """The `since` parameter; an empty `since=` is the same as none (contract 4)."""
    return request.query.get("since") or None


def relative_url(request: web.Request, since_value: str) -> str:
    """This request's path and parameters as given, with `since` replaced; absolute
    from `server.public_url` when that is set."""
    kept = [(k, v) for k, v in request.query.items() if k != "since"]
    return public_url(request, f"{request.path}?{urlencode([('since', since_value), *kept])}")


def public_url(request: web.Request, path: str) -> str:
    """`path` (starting with "/") as the server returns it: relative, or absolute
    from `server.public_url` when that is set."""
    return request.app[CONFIG].server.public_url.rstrip("/") + path


# json_url's answers: a client polling the head of its change feed sends the same
# URL each time and gets the same next_since back, and list pages are read at the
# same cursors. Building one (urlencode, json.dumps) cost ~7 µs, a tenth of a
# poll's own time; a URL of the same request gives the same answer, so the answers
# of the last half hour to hour are kept (`recent.Recent`, URLS_KEPT in each of two
# generations), for query strings up to QUERY_REMEMBERED characters (the memo stays
# under ~2 MB however odd the query).
URLS_KEPT = 1024
QUERY_REMEMBERED = 400
_urls: Recent[tuple[str, str, str, str], str] = Recent(URLS_KEPT)


def json_url(request: web.Request, since_value: str) -> str:
    """`relative_url` as a JSON string."""
    query = request.rel_url.raw_query_string  # what request.query is parsed from
    if len(query) > QUERY_REMEMBERED:
        return json.dumps(relative_url(request, since_value))
    key = (request.app[CONFIG].server.public_url, request.path, query, since_value)
    url = _urls.get(key, None)
    if url is None:
        url = json.dumps(relative_url(request, since_value))
        _urls.put(key, url)
    return url
