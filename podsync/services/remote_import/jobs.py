"""Imports from another server as jobs: one per user at a time, their state and
report in the database (`store/remote_imports.py`), so that any process of the
server shows an import's progress, asks it to stop, or refuses a second one.

The process that runs an import writes its heartbeat (with the report so far) every
HEARTBEAT_S and reads there whether a stop was asked for; it stops the import at its
deadline, when asked, or when the process shuts down, and writes what stopped it.
A running row whose heartbeat is older than DROPPED_AFTER_S belongs to a process
that ended without finishing it; it no longer counts as running.

Passwords the remote refused at the sign-in, from the web UI's form, are counted
like failed logins (`auth.login_max_failures` per `auth.login_lockout_seconds`);
past them the form is refused without contacting the remote.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from podsync import timestamps
from podsync.config import AuthConfig
from podsync.errors import PodsyncError
from podsync.model import User
from podsync.services import person_fetches
from podsync.services.remote_import import (
    RemoteAccount,
    RemoteError,
    RemoteImportReport,
    RemoteImportService,
    RemoteRefusedAddress,
    RemoteUnauthorized,
)
from podsync.services.remote_import.actions import ReadPosition
from podsync.services.remote_import.client import RemoteClient
from podsync.storage.engine import Engine
from podsync.store import meta, remote_imports, user_fetches
from podsync.store.remote_imports import DONE, FAILED, REFUSED, RUNNING, STOPPED, ImportRow

log = logging.getLogger("podsync.import")

_US = 1_000_000
HEARTBEAT_S = 2.0
DROPPED_AFTER_S = 30.0
SIGN_IN_S = 30.0  # the sign-in, answered while the person waits
KEEP = 10  # imports kept per user (their reports)
SHUTDOWN_WAIT_S = 5.0  # for stopped imports to write their reports
DROPPED = "the process that ran it ended before it finished (podsync stopped or restarted)"
CANCELLED = "cancelled on the Import and export page"
SHUTTING_DOWN = "podsync was shutting down"

Say = Callable[[str], None]


class ImportRunning(PodsyncError):
    """The user has an import running already."""

    def __init__(self, row: ImportRow) -> None:
        where = "on the command line" if row.origin == "cli" else "on the web UI"
        super().__init__(
            f"an import from {row.server} is running already (started {when(row.started_at)} "
            f"{where}); wait for it to end, or cancel it on the Import and export page"
        )


class ImportThrottled(PodsyncError):
    """Too many passwords refused by remote servers on the form, lately."""

    def __init__(self, retry_after: int) -> None:
        minutes = max(1, math.ceil(retry_after / 60))
        super().__init__(
            f"too many passwords were refused by the servers you imported from lately; "
            f"try again in {minutes} minute{'s' if minutes != 1 else ''}"
        )
        self.retry_after = retry_after


@dataclass(frozen=True)
class ImportJob:
    """What a page shows of one import."""

    id: int
    origin: str
    server: str
    state: str  # running, done, stopped, failed (a dropped one reads as stopped)
    started_at: int
    finished_at: int | None
    stop_asked: bool
    report: RemoteImportReport | None

    @property
    def running(self) -> bool:
        return self.state == RUNNING


@dataclass
class _Run:
    job_id: int
    user: User
    remote: RemoteClient
    report: RemoteImportReport
    position: ReadPosition
    say: Say
    reason: str | None = None  # why it was stopped from outside
    inner: asyncio.Task[None] | None = None


def when(us: int) -> str:
    return datetime.fromtimestamp(us / _US, UTC).strftime("%Y-%m-%d %H:%M UTC")


class ImportJobs:
    def __init__(self, db: Engine, importer: RemoteImportService, auth: AuthConfig) -> None:
        self.db = db
        self.importer = importer
        self.max_refused = auth.login_max_failures
        self.window_us = auth.login_lockout_seconds * _US
        self._runs: dict[int, _Run] = {}
        self._tasks: set[asyncio.Task[str]] = set()
        self._closing = False

    # -- starting ------------------------------------------------------------------

    async def start(self, user: User, account: RemoteAccount, *, allow_private: bool) -> int:
        """Sign in to the remote (while the person waits) and run the import in the
        background; its id. ImportThrottled, ImportRunning, RemoteUnauthorized,
        RemoteError (nothing changed) as the form answers them."""
        run = await self._begin(user, account, "web", allow_private, lambda _text: None)
        task = asyncio.create_task(self._execute(run), name=f"import {run.job_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return run.job_id

    async def run_here(
        self, user: User, account: RemoteAccount, *, allow_private: bool, say: Say
    ) -> ImportJob:
        """The same import, run to its end in this task (the CLI)."""
        run = await self._begin(user, account, "cli", allow_private, say)
        state = await self._execute(run)
        now = timestamps.now_us()
        return ImportJob(run.job_id, "cli", run.remote.base, state, 0, now, False, run.report)

    async def _begin(
        self, user: User, account: RemoteAccount, origin: str, allow_private: bool, say: Say
    ) -> _Run:
        if origin == "web":
            await self._check_throttle(user.id)
            await self._take_turn(user.id)
        remote = self.importer.client(account, allow_private=allow_private)
        job_id = await self._claim(user.id, origin, remote.base, account.username)
        try:
            await remote.__aenter__()
            try:
                async with asyncio.timeout(SIGN_IN_S):
                    api = await remote.sign_in()
            except TimeoutError:
                raise RemoteError(
                    remote.base, f"no answer to the sign-in in {SIGN_IN_S:g} s"
                ) from None
        except BaseException as exc:
            await remote.close()
            # Nothing changed. A password the remote refused on the form stays, for
            # the throttle; anything else leaves no trace.
            refused = isinstance(exc, RemoteUnauthorized) and origin == "web"
            await self._end_sign_in(job_id, refused)
            if isinstance(exc, RemoteRefusedAddress) and origin == "web":
                await self._count_refusal(user.id)
            raise
        say(f"signed in to {remote.base} ({api} API)")
        report = RemoteImportReport(server=remote.base, api=api)
        position = await self._resume_position(user.id, remote.base, account.username, report)
        await self._beat(job_id, report, position)  # the page shows it from now on
        run = _Run(job_id, user, remote, report, position, say)
        self._runs[job_id] = run
        return run

    async def _end_sign_in(self, job_id: int, refused: bool) -> None:
        try:
            async with self.db.write() as conn:
                if refused:
                    now = timestamps.now_us()
                    await remote_imports.finish(conn, job_id, REFUSED, None, None, now)
                else:
                    await remote_imports.delete(conn, job_id)
        except Exception:
            log.error("import %d: its end could not be written", job_id, exc_info=True)

    async def _take_turn(self, user_id: int) -> None:
        """TooManyRequests when the person had their fetches of the minute (the
        Subscribe form's, Refresh's and refused import addresses together)."""
        async with self.db.write(user=user_id) as conn:
            await person_fetches.take_turn(conn, user_id, timestamps.now_us())

    async def _count_refusal(self, user_id: int) -> None:
        """A refused address counts as the fetch it stands for: trying names one after
        another to learn which are private is bound as fetches are."""
        try:
            async with self.db.write() as conn:
                await user_fetches.record(conn, user_id, timestamps.now_us(), user_fetches.REFUSED)
        except Exception:
            log.error("a refused import address could not be counted", exc_info=True)

    async def _check_throttle(self, user_id: int) -> None:
        now = timestamps.now_us()
        async with self.db.read() as conn:
            nth = await remote_imports.nth_newest_refused(
                conn, user_id, now - self.window_us, self.max_refused
            )
        if nth is not None:
            raise ImportThrottled(max(1, math.ceil((nth + self.window_us - now) / _US)))

    async def _claim(self, user_id: int, origin: str, server: str, remote_user: str) -> int:
        now = timestamps.now_us()
        async with self.db.write(user=user_id) as conn:
            await meta.lock_user(conn, user_id)  # PostgreSQL: one claim per user at once
            found = await remote_imports.running(conn, user_id)
            if found is not None and found.heartbeat_at >= now - int(DROPPED_AFTER_S * _US):
                raise ImportRunning(found)
            if found is not None:  # dropped by its process: stopped, with its report
                report = _report(found)
                if report is not None and report.error is None:
                    report.error = DROPPED
                stopped = None if report is None else report.to_json()
                await remote_imports.finish(conn, found.id, STOPPED, stopped, found.since, now)
            await remote_imports.prune(conn, user_id, KEEP - 1, now - self.window_us)
            return await remote_imports.add(conn, user_id, origin, server, remote_user, now)

    async def _resume_position(
        self, user_id: int, server: str, remote_user: str, report: RemoteImportReport
    ) -> ReadPosition:
        """Where the last import of this account stopped, when it stopped half way
        (a second run completes it without reading again what it read)."""
        async with self.db.read() as conn:
            last = await remote_imports.latest_from(conn, user_id, server, remote_user)
        earlier = None if last is None else _report(last)
        if last is None or last.state != STOPPED or earlier is None or last.since is None:
            return ReadPosition()
        if last.since == "0" or earlier.api != report.api:
            return ReadPosition()
        report.resumed = when(last.started_at)
        return ReadPosition(last.since)

    # -- running -------------------------------------------------------------------

    async def _execute(self, run: _Run) -> str:
        """Run the import to its end (or its stop); its final state."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.importer.bounds.deadline_s
        run.inner = asyncio.create_task(
            self.importer.run(run.user, run.remote, run.report, run.position, run.say)
        )
        if self._closing:  # it signed in while the server began to shut down
            self._stop(run, SHUTTING_DOWN)
        state = STOPPED
        try:
            while not run.inner.done():
                await asyncio.wait({run.inner}, timeout=HEARTBEAT_S)
                if run.inner.done():
                    break
                if loop.time() > deadline:
                    self._stop(run, self.importer.bounds.deadline_message())
                elif await self._beat(run.job_id, run.report, run.position):
                    self._stop(run, CANCELLED)
            state = self._outcome(run)
        except asyncio.CancelledError:  # this task itself: stop the import, say so
            self._stop(run, run.reason or SHUTTING_DOWN)
            await asyncio.wait({run.inner})
            state = self._outcome(run)
            raise
        finally:
            await run.remote.close()
            self._runs.pop(run.job_id, None)
            since = run.position.since if state == STOPPED and run.position.since != "0" else None
            await self._finish(run.job_id, state, run.report, since)
            log.info(
                "user %d: import %d from %s %s: %d feeds and %d episode actions added",
                run.user.id,
                run.job_id,
                run.remote.base,
                state,
                run.report.feeds_added + run.report.feeds_resubscribed,
                run.report.actions_added,
            )
        return state

    def _outcome(self, run: _Run) -> str:
        """The finished import's state, its report told what ended it."""
        assert run.inner is not None
        if run.inner.cancelled():
            run.report.error = run.reason or SHUTTING_DOWN
            return STOPPED
        failure = run.inner.exception()
        if isinstance(failure, RemoteError):  # nothing at all could be read
            run.report.error = str(failure)
            return FAILED
        if failure is not None:
            log.error("import %d failed", run.job_id, exc_info=failure)
            run.report.error = f"an error in podsync ({type(failure).__name__}); its log says more"
            return STOPPED
        return DONE if run.report.error is None else STOPPED

    @staticmethod
    def _stop(run: _Run, reason: str) -> None:
        if run.reason is None:
            run.reason = reason
        if run.inner is not None:
            run.inner.cancel()

    def running_here(self) -> bool:
        return bool(self._runs)

    def stop_all(self, reason: str) -> None:
        """Stop every import this process runs (a signal, the server's shutdown)."""
        for run in list(self._runs.values()):
            self._stop(run, reason)

    async def shutdown(self) -> None:
        """Stop this process's imports and let them write their reports."""
        self._closing = True
        self.stop_all(SHUTTING_DOWN)
        deadline = asyncio.get_running_loop().time() + SHUTDOWN_WAIT_S
        while self._tasks:  # one that signed in meanwhile stops at once too
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            await asyncio.wait(set(self._tasks), timeout=left)

    async def _beat(self, job_id: int, report: RemoteImportReport, position: ReadPosition) -> bool:
        try:
            async with self.db.write() as conn:
                return await remote_imports.beat(
                    conn, job_id, report.to_json(), position.since, timestamps.now_us()
                )
        except Exception:  # a database that is busy now: the next beat will do
            log.warning("import %d: its heartbeat could not be written", job_id, exc_info=True)
            return False

    async def _finish(
        self, job_id: int, state: str, report: RemoteImportReport | None, since: str | None
    ) -> None:
        text = None if report is None else report.to_json()
        try:
            async with self.db.write() as conn:
                await remote_imports.finish(conn, job_id, state, text, since, timestamps.now_us())
        except Exception:
            log.error("import %d: its end could not be written", job_id, exc_info=True)

    # -- reading -------------------------------------------------------------------

    async def ask_to_stop(self, user_id: int, job_id: int) -> bool:
        """Ask the user's running import to stop (whichever process runs it)."""
        async with self.db.write() as conn:
            asked = await remote_imports.ask_to_stop(conn, user_id, job_id)
        run = self._runs.get(job_id)
        if asked and run is not None:  # here: at once
            self._stop(run, CANCELLED)
        return asked

    async def get(self, user_id: int, job_id: int) -> ImportJob | None:
        async with self.db.read() as conn:
            row = await remote_imports.get(conn, user_id, job_id)
        return None if row is None or row.report is None else _job(row)

    async def latest(self, user_id: int) -> ImportJob | None:
        async with self.db.read() as conn:
            row = await remote_imports.latest_shown(conn, user_id)
        return None if row is None else _job(row)


def _report(row: ImportRow) -> RemoteImportReport | None:
    return None if row.report is None else RemoteImportReport.from_json(row.report)


def _job(row: ImportRow) -> ImportJob:
    report = _report(row)
    state = row.state
    dropped = row.heartbeat_at < timestamps.now_us() - int(DROPPED_AFTER_S * _US)
    if state == RUNNING and dropped:
        state = STOPPED
        if report is not None and report.error is None:
            report.error = DROPPED
    return ImportJob(
        row.id, row.origin, row.server, state, row.started_at, row.finished_at, row.cancel, report
    )
