"""Running the app: the listening sockets, access log, malformed-HTTP handling, TLS,
signals, a reload on SIGHUP; one of several workers (`serve/workers.py`)."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import socket
import ssl
import uuid
from collections.abc import Callable

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from podsync import __version__
from podsync.config import Config, describe_database
from podsync.errors import AddressInUse
from podsync.logs import mark_worker
from podsync.serve import HEAP_REPORT_DIR_ENV, native_heap, python_heap, python_lock
from podsync.web.app import create_app
from podsync.web.http import dumps, error_name
from podsync.web.keys import CLIENT_ADDRESS
from podsync.web.middleware import SERVER_HEADER
from podsync.web.process import ALONE, Worker

log = logging.getLogger("podsync")
# Connections waiting to be accepted, per listening socket (aiohttp's default).
BACKLOG = 128
access_log = logging.getLogger("podsync.access")


class AccessLogger(AbstractAccessLogger):
    """One line per request: never the query string, a header or a body."""

    def log(self, request: BaseRequest, response: web.StreamResponse, time: float) -> None:
        client = request.get(CLIENT_ADDRESS, request.remote)
        fields = {
            "client": client,
            "method": request.method,
            "path": request.rel_url.raw_path,
            "status": response.status,
            "bytes": response.body_length,
            "duration_ms": round(time * 1000, 3),
            "request_id": response.headers.get("X-Request-ID", "-"),
        }
        self.logger.info(
            '%(client)s "%(method)s %(path)s" %(status)d %(bytes)d %(duration_ms).1fms'
            " rid=%(request_id)s",
            fields,
            extra=fields,
        )


class _QuietRequestHandler(RequestHandler):
    """aiohttp answers malformed HTTP before any middleware runs, logging the parser's
    message and echoing it in the body; that message can quote the raw request bytes
    (tokens, passwords). Log only the kind of error and answer in the JSON shape."""

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        kind = type(exc).__name__ if exc is not None else "error"
        request_id = uuid.uuid4().hex
        log.warning(
            "rejected a malformed request from %s (%s, %d, request id %s)",
            request.remote,
            kind,
            status,
            request_id,
        )
        if request.writer.output_size > 0:
            raise ConnectionError("response already started; closing the connection")
        description = (
            "the request is not valid HTTP" if status < 500 else "the server failed unexpectedly"
        )
        body = {"error": error_name(status), "description": description}
        response = web.Response(
            status=status,
            text=dumps(body),
            content_type="application/json",
            headers={"X-Request-ID": request_id, "Server": SERVER_HEADER},
        )
        response.force_close()
        return response


class _QuietServer(web.Server):
    def __call__(self) -> RequestHandler:
        return _QuietRequestHandler(self, loop=self._loop, **self._kwargs)


class PodsyncRunner(web.AppRunner):
    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _QuietServer
        return server


def make_runner(app: web.Application, config: Config) -> PodsyncRunner:
    # On SIGTERM in-flight requests get shutdown_timeout seconds (aiohttp's default
    # is 60, past systemd's TimeoutStopSec of 30), then they are cancelled.
    timeout = float(config.server.shutdown_timeout)
    if config.log.access_log:
        return PodsyncRunner(
            app, access_log_class=AccessLogger, access_log=access_log, shutdown_timeout=timeout
        )
    return PodsyncRunner(app, access_log=None, shutdown_timeout=timeout)


def _ssl_context(config: Config) -> ssl.SSLContext | None:
    if not config.server.tls_cert:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.server.tls_cert, config.server.tls_key)
    return context


def _address_in_use(host: str, port: int) -> str:
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return (
        f"cannot listen on {where}: the address is already in use (is another podsync "
        "running?); choose another port with --port or server.port"
    )


def listen(host: str, port: int, backlog: int = BACKLOG) -> list[socket.socket]:
    """The listening sockets of `host` and `port`, bound as asyncio's `create_server`
    binds them (every address the name has, IPv6 ones IPv6 only, addresses reused),
    with the same error when one cannot be bound (AddressInUse, saying what to do,
    when something already listens there). Made once and kept by the process
    that serves (or forks the workers): a reload keeps the address, and connections
    that come meanwhile wait in the backlog instead of being refused."""
    # An ASCII name goes as bytes: as a str, getaddrinfo would load the "idna" codec
    # (and stringprep, 0.1 MB) to encode it to the same bytes.
    name: str | bytes = host.encode("ascii") if host.isascii() else host
    infos = socket.getaddrinfo(
        name, port, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, True)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, True)
            try:
                sock.bind(address)
            except OSError as exc:  # asyncio's words, so the message is what it was
                if exc.errno == errno.EADDRINUSE:
                    raise AddressInUse(_address_in_use(host, port)) from None
                reason = (exc.strerror or str(exc)).lower()
                raise OSError(
                    exc.errno, f"error while attempting to bind on address {address!r}: {reason}"
                ) from None
            sock.listen(backlog)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def urls(config: Config, sockets: list[socket.socket]) -> list[str]:
    """What the start-up line names: the URL of each listening socket."""
    scheme = "https" if config.server.tls_cert else "http"
    found = []
    for sock in sockets:
        host, port = sock.getsockname()[:2]
        found.append(f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}")
    return found


class _Listening(socket.socket):
    """A duplicate of a listening socket whose `listen()` leaves its queue alone.

    asyncio's server calls `listen(backlog)` and then accepts up to `backlog`
    connections each time the socket wakes it: with several workers on one socket,
    the first to wake takes a whole burst (a proxy's or an app's eight connections)
    and keeps it. A worker's site takes one a wake-up (`backlog=1`, as nginx's
    `multi_accept off`), and the queue stays the parent's `BACKLOG` (a `listen(1)`
    on the shared socket would shorten it for every worker)."""

    def __init__(self, listening: socket.socket) -> None:
        super().__init__(fileno=os.dup(listening.fileno()))

    def listen(self, backlog: int | None = None) -> None:
        """It listens already."""


async def start(
    config: Config, sockets: list[socket.socket] | None = None, worker: Worker = ALONE
) -> tuple[PodsyncRunner, list[str]]:
    """Start serving on `sockets` (bound from the config when None); return the runner
    and its URLs. The sockets stay open when the runner ends (each site serves a duplicate)."""
    own = sockets is None
    if sockets is None:
        sockets = listen(config.server.host, config.server.port)
    runner = make_runner(create_app(config, worker), config)
    try:
        await runner.setup()
        ssl_context = _ssl_context(config)
        accepts = BACKLOG if worker.count == 1 else 1
        for sock in sockets:
            site = web.SockSite(runner, _Listening(sock), ssl_context=ssl_context, backlog=accepts)
            await site.start()
        python_heap.settle()  # the app is built: out of the collector's way
        python_lock.settle()  # other requests beside a thread's Python
        return runner, urls(config, sockets)
    except BaseException:
        await runner.cleanup()
        raise
    finally:
        if own:
            for sock in sockets:
                sock.close()


ReloadConfig = Callable[[], Config]


async def serve(
    config: Config,
    new_database: bool = False,
    config_file: str = "",
    sockets: list[socket.socket] | None = None,
    reload_config: ReloadConfig | None = None,
) -> None:
    """Serve (one process) until SIGINT or SIGTERM, then close connections and the
    database. `new_database`: the database did not exist before (the log says it was
    created); `config_file`: the file the configuration was read from, for the
    start-up line. On SIGHUP, `reload_config()` reads the configuration again and the
    app starts over with it on the same sockets (`reload`)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    hangup = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, hangup.set)
    _heap_reports(loop, on=True)
    if sockets is None:
        sockets = listen(config.server.host, config.server.port)
    try:
        runner, where = await start(config, sockets)
        upkeep = _heap_upkeep()
        if new_database:
            log.info("created database at %s", describe_database(config))
        log.info(
            "podsync %s listening on %s (database %s; config %s)",
            __version__,
            ", ".join(where),
            describe_database(config),
            config_file or "none, built-in defaults",
        )
        try:
            while True:
                await _first(stop, hangup)
                if stop.is_set():
                    log.info("shutting down")
                    break
                hangup.clear()
                runner, config = await reload(runner, config, sockets, reload_config)
        finally:
            for task in upkeep:
                task.cancel()
            await runner.cleanup()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
        _heap_reports(loop, on=False)
        for sock in sockets:
            sock.close()
    log.info("stopped")


def _heap_upkeep() -> list[asyncio.Task[None]]:
    """What a serving process does for its memory for as long as it serves: malloc's
    free pages given back, Python's cycles collected while they are few."""
    return [
        asyncio.create_task(native_heap.keep_trimmed(), name="podsync-malloc-trim"),
        asyncio.create_task(python_heap.keep_collected(), name="podsync-collect"),
    ]


def _heap_reports(loop: asyncio.AbstractEventLoop, on: bool) -> None:
    """SIGUSR2 writes a heap report when PODSYNC_DEBUG_HEAP_DIR asks for one
    (docs/development.md); its module is loaded only then."""
    if not os.environ.get(HEAP_REPORT_DIR_ENV):
        return
    from podsync.serve import heap_report

    if on:
        heap_report.install(loop)
    else:
        heap_report.uninstall(loop)


async def _first(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


async def reload(
    runner: PodsyncRunner,
    config: Config,
    sockets: list[socket.socket],
    reload_config: ReloadConfig | None,
) -> tuple[PodsyncRunner, Config]:
    """SIGHUP in one process: read the configuration again and start the app over
    with it; the requests under way finish first (`server.shutdown_timeout`), and
    connections that come meanwhile wait. A configuration that does not load, or an
    app that does not start with it, leaves the server as it was (logged)."""
    if reload_config is None:
        log.warning("SIGHUP: this server has no configuration to read again")
        return runner, config
    new = read_again(reload_config, config, alone=True)
    if new is None:
        return runner, config
    log.info("SIGHUP: starting over with the configuration read again")
    await runner.cleanup()
    try:
        runner, _ = await start(new, sockets)
    except Exception as exc:
        log.error(
            "the configuration read again does not start (%s); serving with the one before", exc
        )
        runner, _ = await start(config, sockets)
        return runner, config
    log.info("reloaded the configuration")
    return runner, new


def read_again(reload_config: ReloadConfig, config: Config, alone: bool = False) -> Config | None:
    """The configuration read again for a reload, or None (logged) when it does not
    load. What needs a new start to change (the address; `alone`, one process
    without workers: their number) is kept and said so."""
    try:
        new = reload_config()
    except Exception as exc:  # ConfigError, a file gone: say so, keep serving
        log.error("SIGHUP: the configuration was not reloaded: %s", exc)
        return None
    kept: dict[str, object] = {"host": config.server.host, "port": config.server.port}
    if alone:
        kept["workers"] = config.server.workers
    changed = [f"server.{k}" for k, v in kept.items() if getattr(new.server, k) != v]
    if changed:
        log.warning("%s changed: that takes a restart; kept as it was", ", ".join(changed))
        new = new.replace("server", **kept)
    return new


async def serve_worker(config: Config, sockets: list[socket.socket], worker: Worker) -> None:
    """One of several workers (`serve/workers.py` forked it): serve on the parent's
    sockets until SIGTERM or until the parent is gone. SIGINT and SIGHUP are the
    parent's: it stops or reloads every worker."""
    mark_worker(worker.index)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    _heap_reports(loop, on=True)

    def parent_gone() -> None:
        loop.remove_reader(worker.lifeline_fd)
        log.warning("worker %d: the parent process is gone; stopping", worker.index)
        stop.set()

    loop.add_reader(worker.lifeline_fd, parent_gone)  # readable only at end-of-file
    runner, _ = await start(config, sockets, worker)
    upkeep = _heap_upkeep()
    try:
        log.info(
            "worker %d of %d serving (pid %d)%s",
            worker.index,
            worker.count,
            os.getpid(),
            "; it runs the background tasks" if worker.leader else "",
        )
        os.write(worker.ready_fd, b"r")
        await stop.wait()
    finally:
        for task in upkeep:
            task.cancel()
        await runner.cleanup()
        loop.remove_signal_handler(signal.SIGTERM)
        _heap_reports(loop, on=False)
