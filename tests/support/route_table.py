"""The app's live route table, for the sweeps that must reach every route: a new
route joins them by being registered, or fails the check that a hand-written list
of requests covers the table (tests/README.md lists the sweeps)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from aiohttp import web

Pattern = tuple[str, str]  # (method, the resource's canonical path)


def live_routes(
    app: web.Application, keep: Callable[[web.AbstractRoute], bool] = lambda route: True
) -> set[Pattern]:
    """(method, pattern) of every route the app serves, HEAD left out (aiohttp adds it
    beside each GET), and those `keep` keeps."""
    return {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None
        and route.method != "HEAD"
        and not route.resource.canonical.startswith("//")
        and keep(route)
    }


def named(*prefixes: str) -> Callable[[web.AbstractRoute], bool]:
    """Keep the routes whose name starts with one of `prefixes` ("gpodder.", ...)."""
    return lambda route: (route.name or "").startswith(prefixes)


def writes(route: web.AbstractRoute) -> bool:
    """Keep the state-changing routes (every method but GET)."""
    return route.method != "GET"


def matches(pattern: str, path: str) -> bool:
    """Whether a concrete path (no query) is one of the pattern's."""
    regex = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(pattern))
    return re.fullmatch(regex, path) is not None


def not_covered(served: Iterable[Pattern], sent: Iterable[tuple[str, str]]) -> list[Pattern]:
    """The served routes that no (method, path) of `sent` reaches."""
    requests = [(method, path.split("?")[0]) for method, path in sent]
    return sorted(
        (method, pattern)
        for method, pattern in served
        if not any(m == method and matches(pattern, p) for m, p in requests)
    )
