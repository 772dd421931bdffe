"""Running the app: access log, malformed-HTTP handling, TLS, signals."""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import ssl
import uuid

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from podsync import __version__
from podsync.config import Config, describe_database
from podsync.errors import AddressInUse
from podsync.web.app import create_app
from podsync.web.http import dumps, error_name
from podsync.web.keys import CLIENT_ADDRESS
from podsync.web.middleware import SERVER_HEADER

log = logging.getLogger("podsync")
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


def _address_in_use(config: Config) -> str:
    host, port = config.server.host, config.server.port
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return (
        f"cannot listen on {where}: the address is already in use (is another podsync "
        "running?); choose another port with --port or server.port"
    )


async def start(config: Config) -> tuple[PodsyncRunner, list[str]]:
    """Start serving; return the runner and the URLs it listens on."""
    runner = make_runner(create_app(config), config)
    await runner.setup()
    try:
        ssl_context = _ssl_context(config)
        site = web.TCPSite(runner, config.server.host, config.server.port, ssl_context=ssl_context)
        try:
            await site.start()
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise AddressInUse(_address_in_use(config)) from None
    except BaseException:
        await runner.cleanup()
        raise
    scheme = "https" if ssl_context else "http"
    urls = []
    for address in runner.addresses:
        host, port = address[0], address[1]
        urls.append(f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}")
    return runner, urls


async def serve(config: Config, new_database: bool = False, config_file: str = "") -> None:
    """Serve until SIGINT or SIGTERM, then close connections and the database.
    `new_database`: the database did not exist before (the log says it was created);
    `config_file`: the file the configuration was read from, for the start-up line."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runner, urls = await start(config)
    if new_database:
        log.info("created database at %s", describe_database(config))
    log.info(
        "podsync %s listening on %s (database %s; config %s)",
        __version__,
        ", ".join(urls),
        describe_database(config),
        config_file or "none, built-in defaults",
    )
    try:
        await stop.wait()
        log.info("shutting down")
    finally:
        await runner.cleanup()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    log.info("stopped")
