"""OPML import and export of one user's subscriptions (contract section 10).

The import sends every feed through the sync rules (`SyncService.apply`) as a
server-made `Subscribe`, in transactions of at most IMPORT_CHUNK feeds once the
whole file is checked, so the CLI and the API share one code path. Feeds with
invalid URLs and repeats within the file (same url key) never reach the batch;
they are skipped and reported.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from podsync import timestamps
from podsync.feeds import InvalidFeedUrl, check_feed_url, has_bad_characters, url_key
from podsync.model import User
from podsync.opml import OPML_TAIL, OutlineFeed, opml_head, opml_outlines
from podsync.rules import APPLIED, IGNORED, Subscribe
from podsync.services.sync import CommandResult, SyncService
from podsync.storage.engine import Engine
from podsync.store import subscriptions, users

MAX_TITLE = 1024
# Feeds written per transaction (contract 10, rev. 2): ~1000 subscribes take well
# under a second on a Raspberry Pi-class disk; a server's writers wait at most that.
IMPORT_CHUNK = 1000
# Feeds read and formatted per piece of an export (a few milliseconds of the loop).
EXPORT_PAGE = 1000
_WHITE_SPACE = re.compile(r"[ \t\r\n]+")


@dataclass(frozen=True)
class SkippedFeed:
    url: str
    reason: str


@dataclass
class ImportPlan:
    subscribes: list[Subscribe] = field(default_factory=list)
    skipped: list[SkippedFeed] = field(default_factory=list)


@dataclass
class ImportReport:
    added: int = 0
    resubscribed: int = 0
    already_subscribed: int = 0
    skipped: list[SkippedFeed] = field(default_factory=list)
    # Which feeds, by (URL, title from the file): what a person reads in the report.
    added_feeds: list[tuple[str, str | None]] = field(default_factory=list)
    resubscribed_feeds: list[tuple[str, str | None]] = field(default_factory=list)
    already_feeds: list[tuple[str, str | None]] = field(default_factory=list)


def clean_title(title: str | None) -> str | None:
    """Runs of ASCII white space (newlines from &#10; included) become one space,
    other control characters go, very long titles are cut."""
    if title is None:
        return None
    text = _WHITE_SPACE.sub(" ", title).strip()
    text = "".join(ch for ch in text if not has_bad_characters(ch))
    return text[:MAX_TITLE] or None


class OpmlService:
    def __init__(self, db: Engine, sync: SyncService) -> None:
        self.db = db
        self.sync = sync

    async def require_user(self, name: str) -> User:
        async with self.db.read() as conn:
            return await users.require_by_name(conn, name)

    async def import_feeds(
        self, user: User, feeds: Sequence[OutlineFeed], now: int | None = None
    ) -> ImportReport:
        """Subscribe `user` to `feeds` (checked first, then written in chunks)."""
        now = timestamps.now_us() if now is None else now
        return await self.apply(user, self.plan(feeds, now), now)

    def plan(
        self,
        feeds: Sequence[OutlineFeed],
        now: int,
        progress: Callable[[int], None] | None = None,
    ) -> ImportPlan:
        """Check every feed (no database): the subscribes to send and the skipped;
        `progress(n)` after n feeds."""
        plan = ImportPlan()
        first_of_key: dict[str, str] = {}
        for number, feed in enumerate(feeds, start=1):
            reason = self._skip_reason(feed.url, first_of_key)
            if reason is not None:
                plan.skipped.append(SkippedFeed(feed.url, reason))
            else:
                plan.subscribes.append(
                    Subscribe(feed.url, occurred_at=now, title=clean_title(feed.title))
                )
            if progress is not None:
                progress(number)
        return plan

    async def apply(
        self,
        user: User,
        plan: ImportPlan,
        now: int,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Send the planned subscribes through the sync rules, in transactions of at
        most IMPORT_CHUNK feeds: each holds the database's one write lock for about a
        second at most, so a running server's writers never wait much longer. A run
        cut short can simply be repeated (what it wrote is `already subscribed`).
        `progress(n)` after n feeds are written."""
        report = ImportReport(skipped=list(plan.skipped))
        for start in range(0, len(plan.subscribes), IMPORT_CHUNK):
            chunk = plan.subscribes[start : start + IMPORT_CHUNK]
            outcome = await self.sync.apply(user.id, None, chunk, now=now)
            self._count(report, chunk, outcome.results)
            if progress is not None:
                progress(start + len(chunk))
        return report

    @staticmethod
    def _count(
        report: ImportReport, chunk: Sequence[Subscribe], results: Sequence[CommandResult]
    ) -> None:
        for command, result in zip(chunk, results, strict=True):
            url = command.feed_url
            named = (url, command.title)
            if result.status == APPLIED and result.created:
                report.added += 1
                report.added_feeds.append(named)
            elif result.status == APPLIED:
                report.resubscribed += 1
                report.resubscribed_feeds.append(named)
            elif result.status == IGNORED and result.entity and result.entity.subscribed:
                report.already_subscribed += 1
                report.already_feeds.append(named)
            elif result.status == IGNORED:
                reason = "unsubscribed later than this import (by a client clock ahead)"
                report.skipped.append(SkippedFeed(url, reason))
            else:
                report.skipped.append(SkippedFeed(url, result.reason or result.status))

    @staticmethod
    def _skip_reason(url: str, first_of_key: dict[str, str]) -> str | None:
        try:
            check_feed_url(url)
        except InvalidFeedUrl as exc:
            return str(exc)
        key = url_key(url)
        if key in first_of_key:
            return f"same feed as {first_of_key[key]} earlier in the file"
        first_of_key[key] = url
        return None

    async def export(self, user: User, include_unsubscribed: bool) -> bytes:
        """The user's feeds (subscribed only, unless asked) as an OPML 2.0 document."""
        return b"".join([chunk async for chunk in self.export_chunks(user, include_unsubscribed)])

    async def export_chunks(self, user: User, include_unsubscribed: bool) -> AsyncIterator[bytes]:
        """The same document in pieces of EXPORT_PAGE feeds, each read and formatted
        on its own: 200k feeds at once held the event loop for seconds (and /healthz
        with it); a piece takes milliseconds. Pages follow the creation order by id,
        so a feed that exists throughout is written exactly once. The first piece
        comes after the first read: a handler that takes it before it starts its
        answer can still answer a database that is not there with a 503, and a list
        of one page is whole before anything is sent."""
        head = opml_head(f"podsync subscriptions of {user.name}", datetime.now(UTC))
        after = 0
        piece = head.encode()
        while True:
            async with self.db.read() as conn:
                rows = await subscriptions.feeds_after(
                    conn, user.id, include_unsubscribed, after, EXPORT_PAGE
                )
            if rows:
                piece += opml_outlines(OutlineFeed(url, title) for _, url, title in rows).encode()
            if len(rows) < EXPORT_PAGE:
                break
            yield piece
            piece = b""
            after = rows[-1][0]
        yield piece + OPML_TAIL.encode()
