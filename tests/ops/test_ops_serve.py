"""Contract section 12 (rev. 2) through a real `podsync serve`: the start-up line,
JSON logs with the access log, the page, metrics, CORS and the OpenAPI version."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from typing import Any

from podsync import __version__
from podsync.config import Config
from tests.conftest import MakeConfig, ServeProcess, config_file

APP = "https://app.example.org"


def _fetch(url: str, method: str = "GET", **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method, headers=headers)  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        return response.status, dict(response.headers), response.read()


def test_a_real_server_with_json_logs_metrics_and_cors(
    make_config: MakeConfig, serve_process: Callable[..., ServeProcess]
) -> None:
    config: Config = make_config(
        server={"metrics": True, "cors_origins": [APP]},
        log={"format": "json", "level": "info"},
    )
    server = serve_process(config)
    status, headers, body = _fetch(server.url + "/")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    assert f"<output>{server.url}</output>".encode() in body

    status, headers, _ = _fetch(
        server.url + "/api/v1/sync",
        "OPTIONS",
        Origin=APP,
        **{"Access-Control-Request-Method": "POST"},
    )
    assert (status, headers["Access-Control-Allow-Origin"]) == (204, APP)

    status, _, body = _fetch(server.url + "/api/v1/openapi.json")
    assert json.loads(body)["info"]["version"] == __version__

    _fetch(server.url + "/healthz?token=do-not-log-me", **{"X-Request-ID": "probe-1"})
    status, headers, body = _fetch(server.url + "/metrics")
    assert status == 200
    text = body.decode()
    assert 'podsync_http_requests_total{method="GET",route="/healthz",status="200"} 1.0' in text
    # A preflight matches no route (OPTIONS is not routed): one label for all of them.
    assert 'podsync_http_requests_total{method="OPTIONS",route="unmatched",status="204"}' in text

    assert server.stop() == 0
    lines = [json.loads(line) for line in server.output().splitlines() if line.strip()]
    for line in lines:
        assert {"time", "level", "message"} <= set(line), line
        assert line["time"].endswith("Z")
    start = next(line for line in lines if "listening on" in line["message"])
    assert start["message"] == (
        f"podsync {__version__} listening on {server.url} "
        f"(database {config.database.path}; config {config_file(config)})"
    )
    access = next(line for line in lines if line.get("request_id") == "probe-1")
    assert access["method"] == "GET"
    assert access["path"] == "/healthz"
    assert access["status"] == 200
    assert isinstance(access["duration_ms"], float | int)
    assert "do-not-log-me" not in server.output()


def test_the_start_up_line_names_a_postgresql_database_without_its_password(
    tmp_path: Any,
) -> None:
    from podsync.config import describe_database, load_config

    path = tmp_path / "pg.toml"
    path.write_text('[database]\nurl = "postgresql://pods:hunter2@db.example.org:6432/podsync"\n')
    described = describe_database(load_config(path, environ={}))
    assert described == "PostgreSQL database podsync on db.example.org:6432"


async def test_a_500_logs_one_json_line_with_the_request_id_and_the_traceback(
    api: Any,
) -> None:
    import io
    import logging

    from podsync.logs import JsonFormatter
    from tests.conftest import BOOM, bearer, login

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("podsync")
    logger.addHandler(handler)
    try:
        token = (await login(api))["access_token"]
        response = await api.get(BOOM, headers={**bearer(token), "X-Request-ID": "boom-1"})
        assert response.status == 500
    finally:
        logger.removeHandler(handler)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    error = next(line for line in lines if line["level"] == "error")
    assert error["request_id"] == "boom-1"
    assert "RuntimeError: boom" in error["exception"]
