"""Contract section 14, "Secrets stay out of output": `db copy-to` also takes its
target URL from `$PODSYNC_COPY_TO_URL` or a prompt with hidden input, so no
database password has to go on a command line (`ps`, shell history)."""

from __future__ import annotations

import asyncio
import sys

from click.testing import CliRunner

from podsync.cli import cli
from tests.conftest import PASSWORD, MakeConfig, config_file, with_accounts
from tests.support.cli_support import podsync_process
from tests.support.pg_cluster import Cluster, free_port
from tests.support.terminal import converse

SECRET = "CopyPw-never-on-screen"


def _target(cluster: Cluster) -> str:
    # The test cluster trusts local connections: the password is accepted and unused.
    return cluster.new_database().replace("postgres@", f"postgres:{SECRET}@")


def test_copy_to_takes_the_url_from_the_environment(
    make_config: MakeConfig, pg_cluster: Cluster
) -> None:
    config = make_config()
    asyncio.run(with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD)))
    done = podsync_process(
        ["--config", str(config_file(config)), "db", "copy-to"],
        {"PODSYNC_COPY_TO_URL": _target(pg_cluster)},
    )
    assert done.returncode == 0, done.stderr
    assert "1 users" in done.stdout
    assert "to postgresql://postgres:<redacted>@127.0.0.1:" in done.stdout
    assert SECRET not in done.stdout + done.stderr
    assert done.stderr == ""  # PODSYNC_COPY_TO_URL is podsync's own: no warning about it


def test_copy_to_asks_for_the_url_without_echoing_it(
    make_config: MakeConfig, pg_cluster: Cluster
) -> None:
    config = make_config()
    asyncio.run(with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD)))
    command = [sys.executable, "-m", "podsync", "--config", str(config_file(config))]
    code, screen = converse(
        ["env", "-u", "PODSYNC_COPY_TO_URL", *command, "db", "copy-to"],
        [(b"PostgreSQL URL", _target(pg_cluster).encode()), (b"copied", None)],
    )
    assert code == 0, screen
    assert SECRET.encode() not in screen
    assert b"1 users" in screen


def test_copy_to_without_a_url_and_no_terminal_says_how_to_give_one(
    make_config: MakeConfig,
) -> None:
    config = make_config()
    done = podsync_process(["--config", str(config_file(config)), "db", "copy-to"], {})
    assert done.returncode == 1
    assert done.stderr == (
        "Error: no target URL: give it as an argument, in PODSYNC_COPY_TO_URL, "
        "or at the prompt (which needs a terminal)\n"
    )


def test_copy_to_help_says_how_to_keep_the_password_off_the_command_line() -> None:
    shown = CliRunner().invoke(cli, ["db", "copy-to", "--help"])
    assert shown.exit_code == 0
    text = " ".join(shown.stdout.split())
    assert "PODSYNC_COPY_TO_URL" in text
    assert "prompt" in text
    assert "[URL]" in text  # optional


def test_a_target_that_cannot_be_reached_is_named_without_its_password(
    make_config: MakeConfig,
) -> None:
    config = make_config()
    asyncio.run(with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD)))
    url = f"postgresql://podsync:{SECRET}@127.0.0.1:{free_port()}/podsync?password={SECRET}"
    done = podsync_process(
        ["--config", str(config_file(config)), "db", "copy-to"], {"PODSYNC_COPY_TO_URL": url}
    )
    assert done.returncode == 1
    assert done.stderr.startswith(
        "Error: target database postgresql://podsync:<redacted>@127.0.0.1:"
    ), done.stderr
    assert "password=<redacted>: " in done.stderr
    assert SECRET not in done.stderr
