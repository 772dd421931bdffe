"""OPML import and export of one user's subscriptions (contract section 10).

The import sends every feed through the sync rules (`SyncService.apply`) as a
server-made `Subscribe`, all in one transaction, so the CLI and the API share
one code path. Feeds with invalid URLs and repeats within the file (same url key)
never reach the batch; they are skipped and reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from podsync import timestamps
from podsync.engine import Engine
from podsync.feeds import InvalidFeedUrl, check_feed_url, has_bad_characters, url_key
from podsync.model import User
from podsync.opml import OutlineFeed, serialise_opml
from podsync.rules import APPLIED, IGNORED, Subscribe
from podsync.services.sync import SyncService
from podsync.store import subscriptions, users

MAX_TITLE = 1024
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
        """Subscribe `user` to `feeds` in one transaction."""
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

    async def apply(self, user: User, plan: ImportPlan, now: int) -> ImportReport:
        """Send the planned subscribes through the sync rules in one transaction."""
        report = ImportReport(skipped=list(plan.skipped))
        if not plan.subscribes:
            return report
        outcome = await self.sync.apply(user.id, None, plan.subscribes, now=now)
        for command, result in zip(plan.subscribes, outcome.results, strict=True):
            url = command.feed_url
            if result.status == APPLIED and result.created:
                report.added += 1
            elif result.status == APPLIED:
                report.resubscribed += 1
            elif result.status == IGNORED and result.entity and result.entity.subscribed:
                report.already_subscribed += 1
            elif result.status == IGNORED:
                reason = "unsubscribed later than this import (by a client clock ahead)"
                report.skipped.append(SkippedFeed(url, reason))
            else:
                report.skipped.append(SkippedFeed(url, result.reason or result.status))
        return report

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
        async with self.db.read() as conn:
            entities = await subscriptions.list_all(conn, user.id, include_unsubscribed)
        feeds = [OutlineFeed(e.feed_url, e.title) for e in entities]
        return serialise_opml(feeds, f"podsync subscriptions of {user.name}", datetime.now(UTC))
