"""Repeated slashes in the gpodder layer's paths, routed as one (contract section 14).

Kasts with a trailing `/` typed after the host sends `//api/2/...`; a proxy rule or
an app's URL template can double any other slash. A redirect would not do: OkHttp
turns a redirected POST into a GET. `RepeatedSlashes` is one more resource in the
route table, tried after every other one (it sits at the root of aiohttp's index):
a path that matched nothing, holds `//`, and names the gpodder layer once its
slashes are collapsed is resolved again as that collapsed path. Every other path
keeps its slashes (the bearer API stays exact).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from aiohttp import web
from aiohttp.web_exceptions import HTTPMethodNotAllowed
from aiohttp.web_urldispatcher import (
    AbstractResource,
    AbstractRoute,
    MatchInfoError,
    UrlDispatcher,
    UrlMappingMatchInfo,
)
from yarl import URL

_REPEATED = re.compile("/{2,}")


def collapse_slashes(raw_path: str, prefixes: tuple[str, ...]) -> str | None:
    """`raw_path` with each run of slashes made one, when that starts with one of
    `prefixes` and differs from `raw_path`; else None."""
    if "//" not in raw_path:
        return None
    collapsed = _REPEATED.sub("/", raw_path)
    return collapsed if collapsed.startswith(prefixes) else None


class RepeatedSlashes(AbstractResource):
    """Resolves `router`'s routes under `prefixes` with their slashes collapsed."""

    def __init__(self, router: UrlDispatcher, prefixes: tuple[str, ...]) -> None:
        super().__init__(name=None)
        self._router = router
        self._prefixes = prefixes

    @property
    def canonical(self) -> str:
        return "/"

    def url_for(self, **kwargs: str) -> URL:
        raise RuntimeError("routes only; it builds no URL")  # as aiohttp's sub-app roots do

    def add_prefix(self, prefix: str) -> None:
        raise RuntimeError("podsync mounts no sub-application")

    def get_info(self) -> Any:
        return {"prefixes": self._prefixes}

    def raw_match(self, path: str) -> bool:
        return False

    async def resolve(self, request: web.Request) -> tuple[UrlMappingMatchInfo | None, set[str]]:
        collapsed = collapse_slashes(request.rel_url.raw_path, self._prefixes)
        if collapsed is None:
            return None, set()
        url = request.rel_url.with_path(collapsed, encoded=True)
        found = await self._router.resolve(request.clone(rel_url=url))
        if isinstance(found, MatchInfoError):
            refused = found.http_exception  # 404, or 405 naming what is allowed there
            allowed = refused.allowed_methods if isinstance(refused, HTTPMethodNotAllowed) else ()
            return None, set(allowed)
        return found, set()

    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Iterator[AbstractRoute]:
        return iter(())
