"""A part of the server loaded on the first request under its paths.

The web UI is a fifth of podsync's code and the services only it uses (its pages,
templates' helpers, the import from another server): about 1.4 MB of memory that a
server whose UI nobody opens never needs. `LazyApp` stands in the route table for
it: one resource per path prefix, resolved by an application of its own that is
built on the first request there. Its module is imported on a worker thread, so the
event loop goes on answering the other requests meanwhile (the interpreter's switch
interval hands it the GIL every few milliseconds); only that first request waits.

The part's handlers see their own application as `request.app`, as aiohttp's
sub-applications do: it holds a copy of the main application's state (the database,
the services, the config), taken when it is built, once those are open, and the
part's own keys. The main application's middleware, signals and error handling run
around it as around every other route.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import web
from aiohttp.web_exceptions import HTTPMethodNotAllowed
from aiohttp.web_urldispatcher import AbstractResource, AbstractRoute, UrlMappingMatchInfo
from yarl import URL

from podsync.web.keys import ERROR_PAGE


class LazyPart:
    """What a lazily loaded part provides once its module is imported."""

    def __init__(
        self,
        routes: Callable[[], web.Application],
        open_services: Callable[[web.Application], None],
    ) -> None:
        self.routes = routes  # an application with the part's routes and own keys
        self.open_services = open_services  # its services, over the copied state


class LazyApp:
    """The part under `prefixes` (each `/x` covers `/x` and `/x/...`) and the exact
    `paths`, loaded by `load` (a blocking import, run on a worker thread). `pages`:
    the part answers errors on its paths with its own error page (the web UI's;
    one part of the server may have one)."""

    def __init__(
        self,
        main: web.Application,
        prefixes: tuple[str, ...],
        paths: tuple[str, ...],
        load: Callable[[], LazyPart],
        pages: bool = True,
    ) -> None:
        self._main = main
        self._pages = pages
        self._prefixes = prefixes
        self._paths = paths
        self._load = load
        self._part: LazyPart | None = None
        self._app: web.Application | None = None  # routes; state once `_ready`
        self._ready = False
        self._building: asyncio.Future[web.Application] | None = None

    def register(self) -> None:
        """Put the part's resources in the main route table and its error page and
        shutdown in the main application's."""
        for prefix in self._prefixes:
            self._main.router.register_resource(_LazyResource(self, prefix, exact=False))
        for path in self._paths:
            self._main.router.register_resource(_LazyResource(self, path, exact=True))
        if self._pages:
            if ERROR_PAGE in self._main:
                raise RuntimeError("another part of the server has its error page already")
            self._main[ERROR_PAGE] = self.error_page
        self._main.on_shutdown.append(self._shutdown)

    def owns(self, path: str) -> bool:
        return path in self._paths or any(
            path == p or path.startswith(p + "/") for p in self._prefixes
        )

    def routes_app(self) -> web.Application:
        """The part's application with its routes (importing it here, on the calling
        thread, when no request did yet): what the route table lists."""
        if self._app is None:
            if self._part is None:
                self._part = self._load()
            self._app = self._part.routes()
        return self._app

    async def app(self) -> web.Application:
        """The part, ready to serve: built by the first request that needs it, while
        the requests that come meanwhile wait for the same build."""
        if self._ready and self._app is not None:
            return self._app
        if self._building is None:
            self._building = asyncio.ensure_future(self._build())
        try:
            return await asyncio.shield(self._building)
        except BaseException:
            if self._building.done() and self._building.exception() is not None:
                self._building = None  # a failed build is tried again by the next request
            raise

    async def _build(self) -> web.Application:
        if self._part is None:
            self._part = await asyncio.to_thread(self._load)
        app = self.routes_app()
        for key in self._main:  # the shared state: database, services, config
            if key not in app:
                app[key] = self._main[key]
        self._part.open_services(app)
        app.freeze()
        self._ready = True
        return app

    def built(self) -> web.Application | None:
        return self._app if self._ready else None

    def error_page(self, request: web.Request, status: int, description: str) -> Any:
        """The main application's error page: the part's, for a request on its paths
        that no route of it took (a method it does not allow). None elsewhere."""
        app = self.built()
        if app is None or not self.owns(request.path):
            return None
        page = app.get(ERROR_PAGE)
        return None if page is None else page(request, status, description)

    async def _shutdown(self, _main: web.Application) -> None:
        app = self.built()
        if app is not None:
            await app.shutdown()


class _LazyResource(AbstractResource):
    """One path prefix (or, `exact`, one path) of a `LazyApp` in the main route table."""

    def __init__(self, part: LazyApp, canonical: str, exact: bool) -> None:
        super().__init__(name=None)
        self._part = part
        self._canonical = canonical
        self._below = None if exact else canonical + "/"

    @property
    def canonical(self) -> str:
        return self._canonical

    def url_for(self, **kwargs: str) -> URL:
        raise RuntimeError("routes only; it builds no URL")  # as aiohttp's sub-app roots do

    def add_prefix(self, prefix: str) -> None:
        raise RuntimeError("podsync mounts no sub-application")

    def get_info(self) -> Any:
        return {"prefix": self._canonical}

    def raw_match(self, path: str) -> bool:
        return False

    async def resolve(self, request: web.Request) -> tuple[UrlMappingMatchInfo | None, set[str]]:
        path = request.rel_url.path_safe
        if path != self._canonical and (self._below is None or not path.startswith(self._below)):
            return None, set()
        app = self._part.built()  # once built: no coroutine on each request's path
        if app is None:
            app = await self._part.app()
        found = await app.router.resolve(request)
        refused = found.http_exception
        if refused is not None:  # 404, or 405 naming what is allowed there
            allowed = refused.allowed_methods if isinstance(refused, HTTPMethodNotAllowed) else ()
            return None, set(allowed)
        found.add_app(app)
        return found, set()

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __iter__(self) -> Iterator[AbstractRoute]:
        """The part's routes under this prefix (loading the part: for whoever lists
        the route table, never on a request's path)."""
        return iter(
            [
                route
                for route in self._part.routes_app().router.routes()
                if route.resource is not None and self._covers(route.resource.canonical)
            ]
        )

    def _covers(self, canonical: str) -> bool:
        return canonical == self._canonical or canonical.startswith(self._canonical + "/")
