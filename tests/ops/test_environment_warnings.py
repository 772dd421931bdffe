"""Contract section 14, "Environment": a `PODSYNC_*` variable that names no setting
is a WARNING at start-up naming the closest setting, never a refusal to start.
Kubernetes puts `PODSYNC_PORT=tcp://...`, `PODSYNC_SERVICE_HOST` and more into every
pod of a namespace with a Service named `podsync`: those are ignored silently."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from podsync.cli import cli
from podsync.config import Config
from tests.conftest import ServeProcess, config_file
from tests.support.cli_support import podsync_process

# What Kubernetes injects for a Service "podsync" (port named "http", 8080/TCP) and a
# Service "podsync-db" (5432/TCP) in the same namespace.
SERVICE_LINKS = {
    "PODSYNC_SERVICE_HOST": "10.96.0.17",
    "PODSYNC_SERVICE_PORT": "8080",
    "PODSYNC_SERVICE_PORT_HTTP": "8080",
    "PODSYNC_PORT": "tcp://10.96.0.17:8080",
    "PODSYNC_PORT_8080_TCP": "tcp://10.96.0.17:8080",
    "PODSYNC_PORT_8080_TCP_PROTO": "tcp",
    "PODSYNC_PORT_8080_TCP_PORT": "8080",
    "PODSYNC_PORT_8080_TCP_ADDR": "10.96.0.17",
    "PODSYNC_DB_SERVICE_HOST": "10.96.0.18",
    "PODSYNC_DB_SERVICE_PORT": "5432",
    "PODSYNC_DB_PORT": "tcp://10.96.0.18:5432",
    "PODSYNC_DB_PORT_5432_TCP": "tcp://10.96.0.18:5432",
    "PODSYNC_DB_PORT_5432_TCP_PROTO": "tcp",
    "PODSYNC_DB_PORT_5432_TCP_PORT": "5432",
    "PODSYNC_DB_PORT_5432_TCP_ADDR": "10.96.0.18",
}


def _healthy(process: ServeProcess) -> None:
    with urllib.request.urlopen(process.url + "/healthz", timeout=10) as answer:  # noqa: S310
        assert answer.status == 200


def test_kubernetes_service_links_are_ignored_silently(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> None:
    process = serve_process(config, env=dict(SERVICE_LINKS))
    _healthy(process)
    process.stop()
    log = process.output()
    assert "WARNING" not in log and "warning" not in log.lower(), log
    assert "PODSYNC_" not in log, log


def test_a_misspelt_variable_is_a_warning_naming_the_closest_setting(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> None:
    process = serve_process(
        config,
        env={"PODSYNC_SYNC_MAX_SUBSCRIPTION_PER_USER": "10", "PODSYNC_LOGLEVEL": "debug"},
    )
    _healthy(process)
    process.stop()
    warnings = [line for line in process.output().splitlines() if "WARNING" in line]
    assert any(
        "PODSYNC_SYNC_MAX_SUBSCRIPTION_PER_USER" in line
        and "PODSYNC_SYNC_MAX_SUBSCRIPTIONS_PER_USER" in line
        for line in warnings
    ), warnings
    assert any("PODSYNC_LOGLEVEL" in line and "PODSYNC_LOG_LEVEL" in line for line in warnings), (
        warnings
    )
    # The value of an unknown variable may be a secret: never shown.
    assert "=10" not in process.output() and "debug" not in "\n".join(warnings)


def test_the_warning_is_a_json_log_line_in_json_format(
    config: Config, serve_process: Callable[..., ServeProcess]
) -> None:
    process = serve_process(config, env={"PODSYNC_LOG_FORMAT": "json", "PODSYNC_SERVR_PORT": "1"})
    _healthy(process)
    process.stop()
    records = [json.loads(line) for line in process.output().splitlines() if line.startswith("{")]
    warning = next(r for r in records if "PODSYNC_SERVR_PORT" in r["message"])
    assert warning["level"] == "warning"
    assert "PODSYNC_SERVER_PORT" in warning["message"]


def test_cli_commands_warn_on_stderr_and_carry_on(tmp_path: Path, config: Config) -> None:
    result = CliRunner().invoke(
        cli,
        ["--config", str(config_file(config)), "config", "check"],
        env={**SERVICE_LINKS, "PODSYNC_DATABSE_PATH": "x.db"},
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("configuration ok")
    assert result.stderr.splitlines() == [
        "Warning: environment variable PODSYNC_DATABSE_PATH names no setting and is ignored; "
        "the closest is PODSYNC_DATABASE_PATH (database.path)"
    ]


def test_a_service_named_podsync_server_does_not_stop_the_server(
    tmp_path: Path, config: Config
) -> None:
    # A Service "podsync-server" injects PODSYNC_SERVER_PORT=tcp://...: a service link,
    # not a port number. It is ignored, with a warning since it shadows a setting.
    result = CliRunner().invoke(
        cli,
        ["--config", str(config_file(config)), "config", "show"],
        env={"PODSYNC_SERVER_PORT": "tcp://10.96.0.19:8080"},
    )
    assert result.exit_code == 0, result.output
    assert "port = 8080  # default" in result.stdout
    assert "PODSYNC_SERVER_PORT" in result.stderr and "service link" in result.stderr


def test_ci_switches_are_not_podsync_settings(tmp_path: Path, config: Config) -> None:
    # .ci/run exports REQUIRE_POSTGRES_TESTS; the servers the tests start inherit it.
    done = podsync_process(
        ["--config", str(config_file(config)), "config", "check"],
        {"REQUIRE_POSTGRES_TESTS": "1", "POSTGRES_TEST_BIN": "/no"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
