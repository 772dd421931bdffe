"""The PostgreSQL database docs/scaling.md tells an operator to create: its command,
run as written against a real cluster, gives a database owned by podsync's role,
in which podsync migrates and syncs."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import asyncpg

from podsync import timestamps
from podsync.config import SyncConfig
from podsync.services.sync import SyncService
from podsync.storage.postgres import PostgresDatabase
from podsync.store import users
from tests.support.pg_cluster import Cluster, _as_owner
from tests.support.sync_helpers import new_subscribes

SCALING = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"
AS_POSTGRES = "sudo -u postgres "


def documented(tool: str) -> list[str]:
    """Each command line of docs/scaling.md's shell blocks that runs `tool`."""
    blocks = re.findall(r"```sh\n(.*?)```", SCALING.read_text(), re.S)
    return [line for block in blocks for line in block.splitlines() if f" {tool} " in line]


def run_as_documented(cluster: Cluster, line: str, names: dict[str, str]) -> None:
    """Run one documented command on the test cluster as the postgres user, with the
    cluster's socket and port added and the documented database names replaced by
    the test's own."""
    assert line.startswith(AS_POSTGRES) and " | " not in line, line
    argv = [names.get(word, word) for word in shlex.split(line.removeprefix(AS_POSTGRES))]
    tool = str(cluster.bin_dir / argv[0])
    done = subprocess.run(
        _as_owner([tool, "-h", str(cluster.root), "-p", str(cluster.port), *argv[1:]]),
        capture_output=True,
    )
    assert done.returncode == 0, (argv, done.stderr.decode())


async def sync_once(url: str, batch: int) -> int:
    """Apply a batch of 30 new subscribes for alice (created when missing); her
    subscriptions afterwards."""
    async with PostgresDatabase(url) as db:
        async with db.write() as conn:
            user = await users.get_by_name(conn, "alice")
            if user is None:
                user = await users.create(conn, "alice", "x", timestamps.now_us())
        outcome = await SyncService(db, SyncConfig()).apply(
            user.id, "phone", *new_subscribes(batch)
        )
        assert [r.status for r in outcome.results] == ["applied"] * 30
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM subscriptions"))
    finally:
        await conn.close()


async def owner_of(url: str) -> str:
    conn = await asyncpg.connect(url)
    try:
        return str(
            await conn.fetchval(
                "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()"
            )
        )
    finally:
        await conn.close()


async def test_the_documented_database_takes_podsyncs_schema_and_syncs(
    pg_cluster: Cluster,
) -> None:
    (create,) = documented("createdb")
    owner = f"podsync{str(id(create))[-6:]}"
    admin = await asyncpg.connect(pg_cluster.url())
    try:
        await admin.execute(f"CREATE ROLE {owner} LOGIN")
    finally:
        await admin.close()
    try:
        # The command creates the owner's database: here the role's namesake.
        run_as_documented(pg_cluster, create, {"podsync": owner})
        url = pg_cluster.url(owner, user=owner)
        assert await owner_of(url) == owner
        assert await sync_once(url, 0) == 30
        assert await sync_once(url, 1) == 60
    finally:
        admin = await asyncpg.connect(pg_cluster.url())
        try:
            await admin.execute(f"DROP DATABASE IF EXISTS {owner} WITH (FORCE)")
            await admin.execute(f"DROP ROLE {owner}")
        finally:
            await admin.close()
