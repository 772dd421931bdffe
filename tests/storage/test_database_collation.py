"""A PostgreSQL database that compares text by a language's rules is named at start-up.

podsync's keys (URL keys, guids, sync and action ids) are looked up and indexed by
text comparisons; under a language's collation they cost about a quarter of
PostgreSQL's CPU a sync batch (docs/performance.md). `podsync serve` says so once,
with what to do (docs/scaling.md); a database that compares bytes, as the docs
create it, and SQLite get no such line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest

from podsync.storage.postgres import PgConnection
from podsync.storage.sqlite import Database
from podsync.store import meta
from tests.conftest import TEST_HASH_COST
from tests.support.pg_cluster import Cluster
from tests.support.server_process import ServerProcess, free_port

# CREATE DATABASE options, and the rules the store should name (None: bytewise).
DATABASES = {
    "documented": ("LC_COLLATE 'C'", None),
    "posix": ("LC_COLLATE 'POSIX'", None),
    "c-utf8": ("LC_COLLATE 'C.UTF-8'", None),
    "icu": ("LOCALE_PROVIDER icu ICU_LOCALE 'en-US'", "en-US"),
    "libc-language": ("LC_COLLATE 'en_US.UTF-8'", "en_US.UTF-8"),
}
NOTE = "the database compares text by the rules of"


@asynccontextmanager
async def database(cluster: Cluster, options: str) -> AsyncIterator[str]:
    """A database of its own made with `options`, as a URL; dropped afterwards."""
    name = f"coll{abs(hash(options)) % 10**8}"
    admin = await asyncpg.connect(cluster.url())
    try:
        try:
            await admin.execute(f"CREATE DATABASE {name} TEMPLATE template0 {options}")
        except asyncpg.WrongObjectTypeError as exc:  # a locale this machine lacks
            if "invalid locale name" not in str(exc):
                raise
            pytest.skip(f"needs the locale of {options}: apt-get install locales, locale-gen")
        try:
            yield cluster.url(name)
        finally:
            await admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
    finally:
        await admin.close()


@pytest.mark.parametrize("case", DATABASES)
async def test_the_store_names_a_languages_rules_and_nothing_else(
    pg_cluster: Cluster, case: str
) -> None:
    options, expected = DATABASES[case]
    async with database(pg_cluster, options) as url:
        raw = await asyncpg.connect(url)
        try:
            assert await meta.language_collation(PgConnection(raw)) == expected
        finally:
            await raw.close()


async def test_sqlite_compares_bytes(tmp_path: Path) -> None:
    async with Database(str(tmp_path / "podsync.db")) as db, db.read() as conn:
        assert await meta.language_collation(conn) is None


def serve_log(tmp_path: Path, url: str) -> str:
    """What a real `podsync serve` on `url` logs from its start to its stop."""
    port = free_port()
    auth = "".join(f"{key} = {value}\n" for key, value in TEST_HASH_COST.items())
    config = tmp_path / "server.toml"
    config.write_text(
        f'[server]\nhost = "127.0.0.1"\nport = {port}\n\n[database]\nurl = "{url}"\n\n'
        f'[auth]\n{auth}\n[log]\nlevel = "info"\naccess_log = false\n\n'
        "[feeds]\nfetch_metadata = false\n"
    )
    server = ServerProcess(config, port, tmp_path / "server.log")
    server.start()
    server.stop()
    return (tmp_path / "server.log").read_text()


@pytest.mark.parametrize("case", ["documented", "icu"])
async def test_serve_says_once_when_the_database_compares_by_a_languages_rules(
    pg_cluster: Cluster, tmp_path: Path, case: str
) -> None:
    options, expected = DATABASES[case]
    async with database(pg_cluster, options) as url:
        log = serve_log(tmp_path, url)
    assert "listening on" in log
    if expected is None:
        assert NOTE not in log
    else:
        lines = [line for line in log.splitlines() if NOTE in line]
        assert len(lines) == 1, log
        assert f"{NOTE} {expected}:" in lines[0]
        assert "--lc-collate C" in lines[0]
        assert "docs/scaling.md" in lines[0]
