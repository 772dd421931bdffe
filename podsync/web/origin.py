"""Where a request comes from, as a browser tells it (contract sections 14 and 15).

A browser attaches what it keeps for this host to any request to it, whichever
page made the request: the session cookie, and the Basic credentials a person once
typed into its prompt. Browsers say which page made a request, in `Sec-Fetch-Site`
and `Origin`; apps send neither. `foreign_page` reads those two headers against
the server's own origin: `server.public_url`, and the origin the request itself was
addressed to (its Host, or a trusted proxy's X-Forwarded-Host and -Proto).
`refuse_foreign_write` is the rule of the APIs that take Basic credentials or a
cookie: a write made by a page of another site is refused before authentication.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from podsync.errors import Forbidden
from podsync.web.keys import CONFIG, FROM_TRUSTED_PROXY

# RFC 9110 section 9.2.1: everything else may change state.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Fetch Metadata: "same-origin" and "none" (typed by the user) are this server's own.
FOREIGN_SITES = frozenset({"cross-site", "same-site"})
_DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int]


def request_origin(request: web.Request) -> str:
    """The origin this request was addressed to, as `scheme://host[:port]`; a
    proxy's X-Forwarded-Proto/-Host count only when it is a trusted proxy."""
    scheme, host = request.scheme, request.host
    if request.get(FROM_TRUSTED_PROXY, False):
        proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
        if proto in _DEFAULT_PORTS:
            scheme = proto
        forwarded_host = request.headers.get("X-Forwarded-Host", "").split(",")[0].strip()
        if forwarded_host:
            host = forwarded_host
    return f"{scheme}://{host}"


def parse_origin(text: str) -> Origin | None:
    """(scheme, host, port) of an http(s) origin, the default port made explicit; None
    for anything else (`null`, another scheme, a path, garbage)."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or parts.username is not None:
        return None
    return scheme, parts.hostname.lower(), port if port is not None else _DEFAULT_PORTS[scheme]


def own_origins(request: web.Request) -> set[Origin]:
    origins = {parse_origin(request_origin(request))}
    public_url: str = request.app[CONFIG].server.public_url
    if public_url:
        parts = urlsplit(public_url)
        origins.add(parse_origin(f"{parts.scheme}://{parts.netloc}"))
    return {origin for origin in origins if origin is not None}


def foreign_page(request: web.Request) -> str | None:
    """Why the browser says a page of another origin made this request, or None when
    nothing says so (an app, or a page of this server)."""
    site = request.headers.get("Sec-Fetch-Site", "").strip().lower()
    if site in FOREIGN_SITES:
        return f"the browser marks it Sec-Fetch-Site: {site}"
    origin = request.headers.get("Origin")
    if origin is not None and parse_origin(origin) not in own_origins(request):
        return "its Origin is not this server's"
    return None


def refuse_foreign_write(request: web.Request) -> None:
    """Forbidden when a page of another site made this write (any method but GET,
    HEAD and OPTIONS), whatever credentials it carries: a cookie, the Basic
    credentials a browser saved, or none. Called before authentication, so such a
    request never counts as a failed login (another site cannot lock a user out)."""
    if request.method in SAFE_METHODS:
        return
    reason = foreign_page(request)
    if reason is not None:
        raise Forbidden(
            f"a write must come from an app, not from a web page of another site "
            f"({reason}); apps send no such header"
        )
