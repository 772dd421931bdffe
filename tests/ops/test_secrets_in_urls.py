"""Contract section 14, "Secrets stay out of output": `config show`, every error
message and every log line hide a password given in a database URL, in its user
part and in its query parameters (`password`, `sslpassword`, any parameter whose
name contains `password`)."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from podsync.cli import cli
from podsync.storage.errors import redact
from tests.conftest import PASSWORD, MakeConfig, ServeProcess, run_cli, with_accounts
from tests.support.cli_support import podsync_process
from tests.support.pg_cluster import Cluster, free_port

USER_PW = "UserPw-0-never-shown"
QUERY_PW = "QueryPw-1-never-shown"
KEY_PW = "KeyPw-2-never-shown"
OTHER_PW = "OtherPw-3-never-shown"
SECRETS = (USER_PW, QUERY_PW, KEY_PW, OTHER_PW)


def _url(host: str, query: str = "") -> str:
    return (
        f"postgresql://pods:{USER_PW}@{host}/podsync?sslmode=disable&password={QUERY_PW}"
        f"&sslpassword={KEY_PW}&Backup_PASSWORD_file={OTHER_PW}&application_name=podsync-x" + query
    )


def _assert_hidden(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret} shown in:\n{text}"


def test_config_show_hides_passwords_in_the_query_too(tmp_path: Path) -> None:
    path = tmp_path / "podsync.toml"
    path.write_text(f'[database]\nurl = "{_url("db.example.org:5432")}"\n')
    result = CliRunner().invoke(cli, ["--config", str(path), "config", "show"], env={})
    assert result.exit_code == 0, result.output
    _assert_hidden(result.output)
    url_line = next(line for line in result.stdout.splitlines() if line.startswith("url = "))
    # Everything but the secrets stays as given: the admin still sees what is set.
    assert url_line == (
        'url = "postgresql://pods:<redacted>@db.example.org:5432/podsync?sslmode=disable'
        "&password=<redacted>&sslpassword=<redacted>&Backup_PASSWORD_file=<redacted>"
        f'&application_name=podsync-x"  # {path}'
    )

    from_env = CliRunner().invoke(
        cli, ["config", "show"], env={"PODSYNC_DATABASE_URL": _url("db.example.org")}
    )
    assert from_env.exit_code == 0, from_env.output
    _assert_hidden(from_env.output)
    assert "password=<redacted>" in from_env.stdout


def test_a_cli_error_about_the_database_hides_query_passwords(make_config: MakeConfig) -> None:
    # Nothing listens on this port: the command fails, naming the database.
    config = make_config(database={"url": _url(f"127.0.0.1:{free_port()}")})
    result = run_cli(config, "user", "list")
    assert result.exit_code == 1
    assert result.output.startswith("Error: database postgresql://pods:<redacted>@127.0.0.1:")
    assert "password=<redacted>" in result.output
    _assert_hidden(result.output)


def test_serve_that_cannot_reach_its_database_hides_query_passwords(tmp_path: Path) -> None:
    env = {
        "PODSYNC_DATABASE_URL": _url(f"127.0.0.1:{free_port()}"),
        "PODSYNC_LOG_LEVEL": "debug",
        "PODSYNC_DATABASE_START_WAIT": "2",  # one try again (a WARNING), then the error
    }
    done = podsync_process(["serve", "--port", "0"], env, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "WARNING" in done.stderr and "trying again" in done.stderr
    assert "refused the connection" in done.stderr.splitlines()[-1]
    _assert_hidden(done.stdout + done.stderr)


def _pg_url_with_query_passwords(cluster: Cluster) -> str:
    # The test cluster trusts local connections: the passwords are accepted and unused.
    return cluster.new_database() + f"&password={QUERY_PW}&sslpassword={KEY_PW}"


async def test_copy_to_says_where_it_copied_without_the_password(
    make_config: MakeConfig, pg_cluster: Cluster
) -> None:
    config = make_config()
    await with_accounts(config, lambda accounts: accounts.add_user("alice", PASSWORD))
    url = _pg_url_with_query_passwords(pg_cluster)
    copied = await asyncio.to_thread(run_cli, config, "db", "copy-to", url)
    assert copied.exit_code == 0, copied.output
    assert "to postgresql://postgres@127.0.0.1:" in copied.output
    assert "password=<redacted>&sslpassword=<redacted>" in copied.output
    _assert_hidden(copied.output)


def test_serve_logs_no_password_from_the_query(
    make_config: MakeConfig,
    pg_cluster: Cluster,
    serve_process: Callable[..., ServeProcess],
) -> None:
    config = make_config(
        database={"url": _pg_url_with_query_passwords(pg_cluster)}, log={"level": "debug"}
    )
    process = serve_process(config)
    with urllib.request.urlopen(process.url + "/healthz", timeout=10) as answer:  # noqa: S310
        assert answer.status == 200
    assert process.stop() == 0
    log = process.output()
    assert "listening on" in log
    _assert_hidden(log)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@h/db", "postgresql://u:<redacted>@h/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql://u:p@ss@h:5432/db", "postgresql://u:<redacted>@h:5432/db"),
        (
            "postgresql:///db?host=/run/postgresql&PassWord=x&pass%77ord=y&sslpassword=z",
            "postgresql:///db?host=/run/postgresql&PassWord=<redacted>&pass%77ord=<redacted>"
            "&sslpassword=<redacted>",
        ),
        (
            "postgresql://h1:1,h2:2/db?a=1&password=x#f",
            "postgresql://h1:1,h2:2/db?a=1&password=<redacted>#f",
        ),
        ("postgresql://u:pw@h:notaport/db", "postgresql://u:<redacted>@h:notaport/db"),
        ("postgresql://h/db?passfile=/root/.pgpass", "postgresql://h/db?passfile=/root/.pgpass"),
        ("", ""),
    ],
)
def test_redact_hides_every_password_and_keeps_the_rest(url: str, shown: str) -> None:
    assert redact(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://pods:{USER_PW}@db.example.org:notaport/podsync",
        f"postgresql://pods:{USER_PW}@[::1/podsync",
        f"postgresql://pods:{USER_PW}@h1:5432,h2:x/podsync",
    ],
)
def test_a_database_url_that_does_not_parse_is_a_configuration_error_that_hides_it(
    tmp_path: Path, url: str
) -> None:
    done = podsync_process(["user", "list"], {"PODSYNC_DATABASE_URL": url}, tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        "Error: configuration: database.url must be a postgresql:// URL like "
        "postgresql://user:password@host:5432/dbname (or empty for SQLite)\n"
    )


@pytest.mark.parametrize(
    "hosts", ["h1:5432,h2,h3:5434", "[::1]:5433,h1:5432,h3", "[::1]", "[::1]:5433", "h1,h2"]
)
def test_a_url_with_several_hosts_is_accepted(hosts: str) -> None:
    url = f"postgresql://pods:{USER_PW}@{hosts}/podsync?password={QUERY_PW}"
    shown = CliRunner().invoke(cli, ["config", "check"], env={"PODSYNC_DATABASE_URL": url})
    assert shown.exit_code == 0, shown.output
    # What podsync accepts, the driver's parser (urllib) reads on this Python too.
    assert urlsplit(url).scheme == "postgresql"


BRACKETS_REFUSED = (
    "database.url has an address in brackets where the PostgreSQL driver cannot read it: "
    "only an IPv6 address goes in brackets, and only as the first host, with its port when "
    "more hosts follow (postgresql://user:password@[::1]:5432,db2:5432/dbname); or give "
    "that host by name"
)


# The driver reads the URL with urllib, which in current Python releases (Debian 12's
# 3.11.2 among them) refuses these; podsync refuses them on every release alike, with
# what to write instead, rather than start on one Python and fail on the next.
@pytest.mark.parametrize("hosts", ["h1:5432,[::1]:5433,h3", "[::1],h2", "h1,[::1]"])
def test_an_ipv6_host_the_driver_cannot_read_is_refused_saying_where_it_goes(
    tmp_path: Path, hosts: str
) -> None:
    url = f"postgresql://pods:{USER_PW}@{hosts}/podsync?password={QUERY_PW}"
    done = podsync_process(["user", "list"], {"PODSYNC_DATABASE_URL": url}, tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"Error: configuration: {BRACKETS_REFUSED}\n"
    copy = podsync_process(
        ["db", "copy-to"], {"PODSYNC_COPY_TO_URL": url, "XDG_DATA_HOME": str(tmp_path)}, tmp_path
    )
    assert copy.returncode == 1
    reason = BRACKETS_REFUSED.removeprefix("database.url ")
    assert copy.stderr == f"Error: the target URL {reason}\n"
