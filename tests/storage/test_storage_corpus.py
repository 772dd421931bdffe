"""Every answer stays byte for byte what the release before gave, on both engines.

The fixture (`tests/fixtures/storage_corpus/`, made by `python -m
tests.support.storage_corpus make DIR` on the release of schema version 19) is a database of
that release and the answers that release gave to ~750 requests over it: the gpodder
API's devices, lists, subscription stream at every cursor, episode pages followed to
the end (plain, aggregated, by podcast in two spellings, by device), the Nextcloud
API's pulls at every `since` around each write (the account password's and an app
password's own device), the simple API, the Open Podcast API's list and change feed
pages; then alice's uploads and the same reads again. Here the database is loaded as
that release left it, the current code migrates it, and the answers must match.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pytest

from podsync.config import Config
from podsync.services.copying import copy_database
from podsync.web.app import create_app
from tests.support.migration_support import database_at
from tests.support.storage_corpus import (
    FIXTURE,
    corpus_config,
    load_answers,
    load_sql,
    read_requests,
    replay,
    write_requests,
)

pytestmark = pytest.mark.both_engines


async def load_fixture(config: Config, sqlite_config: Config) -> int:
    """The fixture's database as its release left it: on SQLite the file itself; on
    PostgreSQL copied into a database of the same schema version."""
    version = load_sql(FIXTURE / "seed.sql", Path(sqlite_config.database.path))
    if config.database.url:
        async with (
            database_at(sqlite_config, "sqlite", version) as source,
            database_at(config, "postgresql", version) as target,
        ):
            await copy_database(source, target)
    return version


def _first_difference(expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> str:
    for want, have in zip(expected, got, strict=True):
        if want != have:
            diff = difflib.unified_diff(
                want["body"].replace("},{", "},\n{").splitlines(),
                have["body"].replace("},{", "},\n{").splitlines(),
                lineterm="",
                n=1,
            )
            return f"{want['request']}: status {want['status']} -> {have['status']}\n" + "\n".join(
                list(diff)[:40]
            )
    return ""


async def test_every_answer_is_the_release_befores(
    aiohttp_client: Any, tmp_path: Path, database_url: str
) -> None:
    meta, expected = load_answers(FIXTURE / "answers.json")
    (tmp_path / "source").mkdir()
    (tmp_path / "served").mkdir()
    sqlite_config = corpus_config(tmp_path / "source")
    config = corpus_config(tmp_path / "served", database_url)
    if not database_url:
        config = sqlite_config
    assert await load_fixture(config, sqlite_config) == meta["schema_version"]
    client = await aiohttp_client(create_app(config))  # migrates on start
    requests = [*read_requests(), *write_requests()]
    got = await replay(client, requests, meta["app_password"])
    assert len(got) == len(expected)
    assert got == expected, _first_difference(expected, got)
