"""Arriving with your history: a remote account's subscriptions and every episode
action, read from another server (gpodder.net v2 API or Nextcloud GPodder Sync) and
applied to a podsync account with the same rules as an upload.

What is applied stays applied, and applying it again adds nothing, so an import that
stops half way (a remote that fails, a limit) is completed by running it again.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from podsync import timestamps
from podsync.errors import LimitExceeded
from podsync.model import User
from podsync.opml import OutlineFeed
from podsync.services.gpodder.episodes import (
    EpisodeService,
    SkipItem,
    parse_client_time,
    parse_item,
)
from podsync.services.opml_io import OpmlService
from podsync.services.remote_import.client import (
    RemoteAccount,
    RemoteClient,
    RemoteError,
    RemoteUnauthorized,
)
from podsync.services.remote_import.report import RemoteImportReport
from podsync.store.episodes import EpisodeAction

__all__ = [
    "RemoteAccount",
    "RemoteError",
    "RemoteImportReport",
    "RemoteImportService",
    "RemoteUnauthorized",
]

# Actions parsed and written per transaction: a short hold of the write lock, never
# across a remote call (1000 kept another user's requests waiting 0.3 s on a loaded
# two-core machine, 500 about 0.1 s).
ACTION_CHUNK = 500
# A server that keeps answering new pages past this is not paging, it is looping.
MAX_PAGES = 100_000
NO_TIME = "no usable time (missing, malformed, or more than a day ahead)"

Parsed = EpisodeAction


def parse_page(
    items: Sequence[Any], now: int, seen: set[bytes]
) -> tuple[list[Parsed], Counter[str], int]:
    """One answer's actions as the upload rules read them (pure, run in a thread):
    what to store, the skipped by reason, and how many were new to this run (an
    action seen on an earlier page is not new). An action without a time of its own
    is skipped: the time of receipt would make it a new action on every run."""
    parsed: list[Parsed] = []
    skipped: Counter[str] = Counter()
    fresh = 0
    rewrites: dict[str, str] = {}
    for item in items:
        try:
            marker = _marker(item)
        except RecursionError:
            skipped["nested too deeply"] += 1
            continue
        if marker in seen:
            continue
        seen.add(marker)
        fresh += 1
        if not isinstance(item, dict) or parse_client_time(item.get("timestamp"), now) == now:
            skipped[NO_TIME if isinstance(item, dict) else "not an object"] += 1
            continue
        try:
            action = parse_item(item, now, rewrites)
        except SkipItem as exc:
            skipped[str(exc)] += 1
            continue
        parsed.append(action)
    return parsed, skipped, fresh


def _marker(item: Any) -> bytes:
    """What tells an action seen on an earlier page (the same server writes it the
    same way each time): a digest of its repr, four times cheaper than JSON."""
    return hashlib.blake2b(repr(item).encode("utf-8", "replace"), digest_size=16).digest()


class RemoteImportService:
    def __init__(self, opml: OpmlService, episodes: EpisodeService) -> None:
        self.opml = opml
        self.episodes = episodes

    async def import_from(
        self,
        user: User,
        account: RemoteAccount,
        *,
        allow_private: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> RemoteImportReport:
        """Read `account` and apply it to `user`. RemoteUnauthorized (nothing read,
        nothing changed) when the remote refuses the password, RemoteError when
        nothing at all could be read; a failure later ends the import with the
        report so far and its `error` set."""
        say = progress or (lambda _text: None)
        async with RemoteClient(account, allow_private=allow_private) as remote:
            report = RemoteImportReport(server=remote.base)
            report.api = await remote.sign_in()
            say(f"signed in to {remote.base} ({report.api} API)")
            try:
                await self._subscriptions(user, remote, report)
                say(f"{report.feeds_read} subscriptions read")
                await self._actions(user, remote, report, say)
            except RemoteError as exc:  # a refused password too, past the sign-in
                if report.feeds_read == 0 and report.actions_read == 0:
                    raise
                report.error = str(exc)
            except LimitExceeded as exc:
                report.error = str(exc)
        return report

    async def _subscriptions(
        self, user: User, remote: RemoteClient, report: RemoteImportReport
    ) -> None:
        found = await remote.subscriptions()
        report.devices = found.devices
        report.feeds_read = len(found.subscribed)
        report.feeds_unsubscribed_there = len(found.unsubscribed)
        now = timestamps.now_us()
        plan = self.opml.plan([OutlineFeed(url, None) for url in found.subscribed], now)
        done = await self.opml.apply(user, plan, now)
        report.feeds_added = done.added
        report.feeds_resubscribed = done.resubscribed
        report.feeds_already = done.already_subscribed
        report.feeds_skipped = done.skipped

    async def _actions(
        self,
        user: User,
        remote: RemoteClient,
        report: RemoteImportReport,
        say: Callable[[str], None],
    ) -> None:
        seen: set[bytes] = set()
        since: int | str = 0
        longest = 0
        for _ in range(MAX_PAGES):
            page = await remote.episode_page(since)
            longest = max(longest, len(page.actions))
            fresh = 0
            # A slice at a time: decoded, checked and written before the next is
            # decoded, so few of a large answer's actions are alive at once.
            for start in range(0, len(page.actions), ACTION_CHUNK):
                fresh += await self._apply_slice(user, page.actions, start, seen, report)
            if fresh:
                say(f"{report.actions_read} episode actions read")
            # mygpo pages by time (>=): a full page of one second comes back for ever,
            # and the actions after it cannot be reached. (A Nextcloud server answers
            # everything at once; podsync's sends the last minute again: not stuck.)
            full = page.actions and len(page.actions) == longest and report.api == "gpodder"
            stuck = fresh == 0 and full
            if stuck and str(page.timestamp) == str(since):
                raise RemoteError(
                    remote.episodes_call(since),
                    f"the same {len(page.actions)} actions came back again: more actions "
                    "share one time than the server sends in one answer, so the ones "
                    "after them cannot be read through this API",
                )
            # The last answer brought nothing new, or the server's clock did not move:
            # every action it has was read.
            if fresh == 0 or str(page.timestamp) == str(since):
                return
            since = page.timestamp
        raise RemoteError("episode actions", f"still new pages after {MAX_PAGES} answers")

    async def _apply_slice(
        self,
        user: User,
        actions: Sequence[Any],
        start: int,
        seen: set[bytes],
        report: RemoteImportReport,
    ) -> int:
        """Parse and store ACTION_CHUNK actions from `start`; how many were new."""
        now = timestamps.now_us()

        def parse() -> tuple[list[Parsed], Counter[str], int]:
            return parse_page(actions[start : start + ACTION_CHUNK], now, seen)

        parsed, skipped, fresh = await asyncio.to_thread(parse)
        report.actions_read += fresh
        report.actions_skipped.update(skipped)
        if parsed:
            stored = await self.episodes.store_imported(user.id, parsed)
            report.actions_added += stored.added
            report.actions_already += stored.already
            if stored.refused_device:
                report.actions_skipped[
                    "names a new device past the device limit (gpodder.max_devices_per_user)"
                ] += stored.refused_device
        return fresh
