"""One COMMIT for several workers' writes (`storage/sqlite_handoff.py`): two engines
on one SQLite file, as two workers of one server are (the writer and a follower, on
one event loop here), with the real socket between them. A follower's write is run
in the writer's group and acknowledged by its COMMIT; errors cross as they were
raised; only the blocks of the list run, and a frame builds nothing else; with no
writer a follower writes itself; a writer gone before answering is a 503 and the
write is not run again."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import socket
import sqlite3
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from podsync.errors import LimitExceeded, Unavailable
from podsync.storage.engine import Connection
from podsync.storage.sqlite import Database
from podsync.storage.sqlite_handoff import RETRY_S, HandOff, WriterLink
from podsync.storage.sqlite_handoff_wire import HandedWriteFailed

SCHEMA = "CREATE TABLE IF NOT EXISTS marks (name TEXT PRIMARY KEY, pid INTEGER) STRICT"


async def insert_mark(conn: Connection, name: str) -> tuple[str, int]:
    """A handed block: its result says which process ran it."""
    await conn.execute("INSERT INTO marks (name, pid) VALUES (?, ?)", (name, os.getpid()))
    return name, os.getpid()


async def refuse(conn: Connection, name: str, kind: str) -> None:
    await conn.execute("INSERT INTO marks (name) VALUES (?)", (name,))
    if kind == "limit":
        raise LimitExceeded(f"{name}: past the limit")
    if kind == "busy":
        raise Unavailable(f"{name}: busy", 7)
    raise ValueError(f"{name}: a bug")


BLOCKS = (insert_mark, refuse)


def marks(path: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM marks")}


def engine(tmp_path: Path, writer: bool) -> Database:
    handoff = HandOff(str(tmp_path / "writer.sock"), writer=writer, blocks=BLOCKS)
    return Database(
        str(tmp_path / "handoff.db"),
        checkpoints="watch" if writer else "none",
        write_turn=str(tmp_path / "write.lock"),
        handoff=handoff,
    )


@contextlib.asynccontextmanager
async def workers(tmp_path: Path) -> AsyncIterator[tuple[Database, Database]]:
    writer = engine(tmp_path, writer=True)
    await writer.open()
    async with writer.write() as conn:
        await conn.execute(SCHEMA)
    follower = engine(tmp_path, writer=False)
    await follower.open()
    try:
        yield writer, follower
    finally:
        await follower.close()
        await writer.close()


async def test_a_followers_write_is_run_in_the_writers_group_and_shares_its_commit(
    tmp_path: Path,
) -> None:
    async with workers(tmp_path) as (writer, follower):
        before = writer.commits, follower.commits
        opened = asyncio.Event()

        async def writers_own() -> None:
            async with writer.write() as conn:
                await conn.execute("INSERT INTO marks (name) VALUES ('writer')")
                opened.set()
                # The group stays open until the follower's job waits for the writer.
                while writer._waiting == 0:  # noqa: ASYNC110
                    await asyncio.sleep(0.001)

        own = asyncio.create_task(writers_own())
        await opened.wait()
        assert await follower.run_write(insert_mark, "follower") == ("follower", os.getpid())
        await own
        # One COMMIT acknowledged both writes, and it was the writer's.
        assert (writer.commits - before[0], follower.commits - before[1]) == (1, 0)
        assert marks(tmp_path / "handoff.db") >= {"writer", "follower"}


async def test_many_followers_writes_share_the_writers_commits(tmp_path: Path) -> None:
    async with workers(tmp_path) as (writer, follower):
        before = writer.commits, follower.commits
        names = [f"f{i}" for i in range(20)]
        done = await asyncio.gather(*(follower.run_write(insert_mark, n) for n in names))
        assert [name for name, _ in done] == names
        assert follower.commits == before[1]
        assert 1 <= writer.commits - before[0] < len(names)
        assert marks(tmp_path / "handoff.db") >= set(names)


async def test_errors_come_back_as_the_writer_raised_them(tmp_path: Path) -> None:
    async with workers(tmp_path) as (_, follower):
        with pytest.raises(LimitExceeded, match=r"^a: past the limit$"):
            await follower.run_write(refuse, "a", "limit")
        with pytest.raises(Unavailable) as busy:
            await follower.run_write(refuse, "b", "busy")
        assert (busy.value.reason, busy.value.retry_after) == ("b: busy", 7)
        with pytest.raises(HandedWriteFailed):
            await follower.run_write(refuse, "c", "bug")
        # Each failed block was rolled back alone; the writer writes on.
        assert await follower.run_write(insert_mark, "d") == ("d", os.getpid())
        assert marks(tmp_path / "handoff.db") == {"d"}


async def test_a_name_off_the_list_is_refused(tmp_path: Path) -> None:
    async with workers(tmp_path) as (writer, _):
        link = WriterLink(str(tmp_path / "writer.sock"))
        try:
            with pytest.raises(HandedWriteFailed):
                await link.hand("os.system", ("touch pwned",))
            with pytest.raises(HandedWriteFailed):
                await link.hand(f"{__name__}.marks", (str(tmp_path / "handoff.db"),))
        finally:
            await link.close()
        assert writer._desk is not None and writer._desk.handed_in == 0


class _RemovesAFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.remove, (str(self.path),)


async def test_a_frame_that_names_anything_but_plain_values_builds_nothing(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("still here")
    async with workers(tmp_path) as (writer, follower):
        job = pickle.dumps((1, f"{__name__}.insert_mark", (_RemovesAFile(victim),)))
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
            raw.connect(str(tmp_path / "writer.sock"))
            raw.sendall(struct.pack("!I", len(job)) + job)
            raw.settimeout(5)
            loop = asyncio.get_running_loop()
            assert await loop.run_in_executor(None, raw.recv, 100) == b""  # closed on us
        assert victim.read_text() == "still here"
        assert writer._desk is not None and writer._desk.handed_in == 0
        # The others' links are not affected.
        assert await follower.run_write(insert_mark, "after") == ("after", os.getpid())


async def test_with_no_writer_a_follower_writes_itself_and_hands_over_once_one_is_back(
    tmp_path: Path,
) -> None:
    follower = engine(tmp_path, writer=False)
    await follower.open()
    try:
        async with follower.write() as conn:
            await conn.execute(SCHEMA)
        before = follower.commits
        await follower.run_write(insert_mark, "alone")
        assert follower.commits == before + 1  # its own COMMIT, through the turn
        writer = engine(tmp_path, writer=True)
        await writer.open()
        try:
            await asyncio.sleep(RETRY_S)  # the follower looks for a writer again
            commits = writer.commits
            await follower.run_write(insert_mark, "handed")
            assert (writer.commits, follower.commits) == (commits + 1, before + 1)
        finally:
            await writer.close()
        # The writer stopped: the follower writes itself again, nothing refused.
        await follower.run_write(insert_mark, "alone again")
        assert follower.commits == before + 2
    finally:
        await follower.close()
    assert marks(tmp_path / "handoff.db") == {"alone", "handed", "alone again"}


async def test_a_writer_gone_before_answering_is_a_503_and_the_write_is_not_sent_again(
    tmp_path: Path,
) -> None:
    """A writer that took the job and died (here: read it and hung up): the follower
    cannot know whether it committed, answers as a crashed server would, and does not
    write it itself."""
    received: list[bytes] = []

    async def dies_with_the_job(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read(1 << 16))
        writer.close()

    path = str(tmp_path / "writer.sock")
    server = await asyncio.start_unix_server(dies_with_the_job, path)
    follower = engine(tmp_path, writer=False)
    await follower.open()
    try:
        async with follower.write() as conn:
            await conn.execute(SCHEMA)
        with pytest.raises(Unavailable) as gone:
            await follower.run_write(insert_mark, "maybe")
        assert gone.value.retry_after > 0
        assert received and b"insert_mark" in received[0]
        assert marks(tmp_path / "handoff.db") == set()
    finally:
        await follower.close()
        server.close()
