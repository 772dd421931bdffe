"""One COMMIT for several workers' writes: the hot write blocks of every worker of
one server run in one of them, inside its group transactions (`sqlite.Database`).

With `server.workers = 2` each worker groups only its own writes, and the workers
take turns writing (`sqlite_write_turn`): the turn was held about 95% of the time
and each group held half the writes one process would have grouped, so a second
worker added little to writes. Here worker 0, the writer, also runs the other
workers' hot write blocks (a sync batch and what it answers): its groups hold both
workers' writes, one COMMIT (one fsync at durability "full") acknowledges them all,
and its connection's page cache is never dropped for another worker's change. The
work before a block (parsing, rules' checks, URL keys, ids) stays in the worker that
took the request; what crosses is the block's name and its prepared arguments.

- The writer listens on a unix socket in the parent's owner-only directory
  (`WriteDesk`); another worker (a follower) sends a job there (`WriterLink`). The
  writer runs it as one of its own write blocks and answers after the COMMIT of its
  group. Only blocks of the list given to the engine run, by name
  (`sqlite_handoff_wire` builds nothing else from a frame).
- Correctness never depends on the writer: when there is none (worker 0 restarting
  or stopping, or one worker alone), a follower writes itself through the turn.
- A follower answers a write only after the writer said it committed. When the
  writer dies with a job sent, the follower answers 503 and does not send it again
  (an episode upload is not idempotent): what a crashed server answers.
- A follower's death loses nothing of anyone's: the writer's group commits
  regardless, and its answers to the dead follower go nowhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import struct
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from podsync.errors import Unavailable
from podsync.storage.errors import RETRY_AFTER_DOWN
from podsync.storage.sqlite_handoff_wire import (
    DONE,
    FAILED,
    LEAVING,
    NOT_TAKEN,
    WireError,
    frame,
    pack_error,
    read_frame,
    unpack_error,
)

log = logging.getLogger("podsync.db")

# A write block that may run in another worker: `block(conn, *args)`, its arguments
# and result plain values (dataclasses of podsync, str, bytes, numbers, containers).
Block = Callable[..., Awaitable[Any]]
# A follower that found no writer tries again after this long (meanwhile it writes
# itself, through the turn).
RETRY_S = 0.5
# A stopping writer waits this long at most for its followers to hang up (each does
# once its jobs are answered: at once, unless a block is still running there).
LEAVING_S = 2.0
_PEER = struct.Struct("3i")  # SO_PEERCRED: pid, uid, gid


def block_name(block: Block) -> str:
    return f"{block.__module__}.{block.__qualname__}"


@dataclass(frozen=True)
class HandOff:
    """Where the workers of one server meet to write in one of them."""

    path: str  # the writer's unix socket
    writer: bool  # this worker is the one that writes for the others
    blocks: tuple[Block, ...]  # the write blocks that may be handed over


class WriteDesk:
    """The writer's end: runs the followers' jobs as write blocks of its own."""

    def __init__(
        self,
        path: str,
        blocks: Mapping[str, Block],
        run: Callable[[Block, tuple[Any, ...]], Awaitable[Any]],
    ) -> None:
        self.path = path
        self.blocks = blocks
        self._run = run
        self._server: asyncio.Server | None = None
        self._inode = 0
        self._jobs: set[asyncio.Task[None]] = set()
        self._links: set[asyncio.StreamWriter] = set()
        self._closing = False
        self.handed_in = 0  # jobs run for other workers (tests, the bench)

    async def open(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # left by a writer before this one, that died
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(self.path)
            os.chmod(self.path, 0o600)
            self._inode = os.stat(self.path).st_ino
            self._server = await asyncio.start_unix_server(self._serve, sock=sock)
        except BaseException:
            sock.close()
            raise

    async def close(self) -> None:
        """Stop taking jobs: those running are answered after their COMMIT; the
        followers are told first (LEAVING), and any job that crosses that is answered
        NOT_TAKEN (its follower writes it itself). Then the socket goes."""
        self._closing = True
        if self._server is not None:
            self._server.close()
        leaving = frame((0, LEAVING, None))
        for link in self._links:
            link.write(leaving)
        while self._jobs:
            await asyncio.wait(set(self._jobs))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(LEAVING_S):
                while self._links:  # noqa: ASYNC110 - each follower hangs up in turn
                    await asyncio.sleep(0.005)
        for link in list(self._links):
            link.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:  # not a later writer's
                os.unlink(self.path)

    async def _serve(self, reader: asyncio.StreamReader, link: asyncio.StreamWriter) -> None:
        if not _same_user(link):
            log.error("a connection to the writer's socket from another user: closed")
            link.close()
            return
        self._links.add(link)
        try:
            while True:
                job, name, args = await read_frame(reader)
                block = self.blocks.get(name)
                if self._closing or block is None:
                    if block is None:
                        log.error("a handed write named %r, which is not one: refused", name)
                    link.write(frame((job, NOT_TAKEN if block else FAILED, None)))
                    continue
                task = asyncio.create_task(self._job(link, job, block, tuple(args)))
                self._jobs.add(task)
                task.add_done_callback(self._jobs.discard)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the follower stopped; its jobs still commit
        except (WireError, ValueError, TypeError) as exc:
            log.error("a frame on the writer's socket was not a job: %s", exc)
        finally:
            self._links.discard(link)
            link.close()

    async def _job(
        self, link: asyncio.StreamWriter, job: int, block: Block, args: tuple[Any, ...]
    ) -> None:
        try:
            answer = (job, DONE, await self._run(block, args))
        except Exception as exc:
            packed = pack_error(exc)
            if packed is None:
                log.exception("a write handed over by another worker failed")
            answer = (job, FAILED, packed)
        self.handed_in += 1
        try:
            data = frame(answer)
        except Exception:
            log.exception("the answer to a handed write could not be sent")
            data = frame((job, FAILED, None))
        if not link.is_closing():
            link.write(data)


def _same_user(link: asyncio.StreamWriter) -> bool:
    sock = link.get_extra_info("socket")
    _pid, uid, _gid = _PEER.unpack(
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER.size)
    )
    return bool(uid == os.geteuid())


class _Connection:
    """One connection of a follower to the writer, and the jobs waiting on it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.pending: dict[int, asyncio.Future[tuple[int, Any]]] = {}
        self.leaving = False  # the writer is stopping: send it nothing more
        self.reading = asyncio.create_task(self._read(reader))

    @property
    def up(self) -> bool:
        return not (self.leaving or self.reading.done() or self.writer.is_closing())

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                job, kind, value = await read_frame(reader)
                if kind == LEAVING:
                    self.leaving = True
                else:
                    answer = self.pending.pop(job, None)
                    if answer is not None and not answer.done():
                        answer.set_result((kind, value))
                if self.leaving and not self.pending:
                    return
        except (asyncio.IncompleteReadError, ConnectionError, WireError, ValueError) as exc:
            if self.pending:
                log.warning("the writing worker went away with writes unanswered: %r", exc)
        finally:
            self.writer.close()
            # Sent, maybe run, maybe committed: never acknowledged, never sent again.
            lost = Unavailable(
                "the worker that writes for the others stopped before answering; "
                "the write may or may not have been saved",
                RETRY_AFTER_DOWN,
            )
            for answer in self.pending.values():
                if not answer.done():
                    answer.set_exception(lost)
            self.pending.clear()


class WriterLink:
    """A follower's end: hands a job to the writer and waits for its answer."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._connection: _Connection | None = None
        self._jobs = itertools.count(1)
        self._retry_at = 0.0
        self._connecting = asyncio.Lock()
        self.handed_out = 0  # jobs the writer ran for this worker (tests, the bench)

    async def hand(self, name: str, args: tuple[Any, ...]) -> tuple[bool, Any]:
        """(True, the block's result) once the writer committed it; (False, None) when
        no writer took it (write it yourself). Raises what the block raised, or
        Unavailable when the writer went away before answering."""
        connection = self._connection
        if connection is None or not connection.up:
            connection = await self._connect()
            if connection is None:
                return False, None
        job = next(self._jobs)
        data = frame((job, name, args))
        answer: asyncio.Future[tuple[int, Any]] = asyncio.get_running_loop().create_future()
        connection.pending[job] = answer
        # No await between the check in `up` and here: the reader cannot have failed
        # the pending jobs already, so this one is answered whatever happens.
        connection.writer.write(data)
        kind, value = await answer
        if kind == DONE:
            self.handed_out += 1
            return True, value
        if kind == NOT_TAKEN:
            return False, None
        raise unpack_error(value)

    async def _connect(self) -> _Connection | None:
        async with self._connecting:
            connection = self._connection
            if connection is not None and connection.up:
                return connection
            loop = asyncio.get_running_loop()
            if loop.time() < self._retry_at:
                return None
            try:
                reader, writer = await asyncio.open_unix_connection(self.path)
            except OSError:
                self._retry_at = loop.time() + RETRY_S
                return None
            self._connection = _Connection(reader, writer)
            return self._connection

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.writer.close()
            with contextlib.suppress(asyncio.CancelledError):
                await connection.reading
