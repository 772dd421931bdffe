"""The web UI's Subscribe form looks at a feed before anything reaches the apps (an
address that answers with a web page or an image is refused with the reason), and
that look is a download on someone's request. So it is bounded like one:

- at most once a minute per address, whatever the answer was: another try within
  the minute, by anyone, gets the answer of the first without a fetch (a fetch still
  under way: "try again in a minute"); a feed the fetcher or `Refresh` fetched in
  the last minute is judged by that fetch (a failed one: "try again in a minute");
- at most FETCHES_PER_USER fetches a minute per user, a Refresh's fetches and
  refused import addresses counted with them (`services/person_fetches.py`);
- both counted in the database (`feed_checks`), so they hold whichever process of a
  server answers, and across restarts.

Past a bound the form comes back with the problem named (TooManyRequests): nothing is
fetched and nothing is subscribed. A Refresh (`refresh`) has the same per-user bound on
top of its per-feed minute. Loaded only when the fetcher is on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from podsync.errors import TooManyRequests
from podsync.services.feeds import NotAFeed
from podsync.services.feeds.http import FetchError, HttpStatusError
from podsync.services.feeds.refusals import is_refusal, shown_to
from podsync.services.person_fetches import FETCHES_PER_USER, WINDOW_US, seconds, take_turn
from podsync.storage.engine import Connection, Engine
from podsync.store import feed_checks, feed_info, meta, user_fetches
from podsync.store.feed_checks import FEED, NOT_A_FEED, UNREACHABLE
from podsync.store.feed_info import LearnedFeed

if TYPE_CHECKING:
    from podsync.services.feeds.fetcher import FeedFetcher

log = logging.getLogger("podsync.feeds")

__all__ = ["FEED", "NOT_A_FEED", "UNREACHABLE", "FeedChecks", "Verdict"]

CHECKS_PER_USER = FETCHES_PER_USER
UNDER_WAY = "This address is being fetched right now. Try again in a minute."


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a look at an address found: a FEED (and what it holds, when it was just
    fetched), NOT_A_FEED (the reason: a web page, an image, a 4xx), or UNREACHABLE
    (the reason: no answer, a timeout, a 5xx; the subscription goes ahead and the
    fetcher tries again later)."""

    answer: str
    reason: str = ""
    learned: LearnedFeed | None = None
    fetched: bool = False  # by this look, not an earlier one


class FeedChecks:
    def __init__(
        self,
        db: Engine,
        fetcher: FeedFetcher,
        *,
        per_user: int = CHECKS_PER_USER,
    ) -> None:
        self.db = db
        self.fetcher = fetcher
        self.per_user = per_user
        self.clock: Callable[[], int] = fetcher.clock

    async def check(
        self, user_id: int, feed_url: str, url_key: str, *, admin: bool = False
    ) -> Verdict:
        """Look at the feed `feed_url` (url key `url_key`) the user is about to
        subscribe to: fetched now, or the answer of a look in the last minute.
        TooManyRequests past a bound (its words for an `admin` or anyone else:
        `refusals.shown_to`)."""
        now = self.clock()
        async with self.db.write(user=user_id) as conn:
            known = await self._known(conn, user_id, url_key, now, admin)
        if known is not None:
            return known
        verdict = replace(await self._fetch(feed_url), fetched=True)
        async with self.db.write() as conn:
            await feed_checks.answer(conn, url_key, now, verdict.answer, verdict.reason)
        return verdict

    async def _known(
        self, conn: Connection, user_id: int, url_key: str, now: int, admin: bool
    ) -> Verdict | None:
        """The answer without a fetch, or None when this check may fetch (and is then
        recorded as under way). In one write, serialised per user across processes."""
        await meta.lock_user(conn, user_id)
        since = now - WINDOW_US
        await feed_checks.forget_before(conn, since)
        recent = await feed_checks.find(conn, url_key)
        if recent is not None:
            if recent.answer is None:
                raise TooManyRequests(UNDER_WAY, seconds(recent.checked_at + WINDOW_US - now))
            return Verdict(recent.answer, recent.reason)
        info = (await feed_info.infos(conn, [url_key])).get(url_key)
        if info is not None and info.checked_at is not None and info.checked_at >= since:
            if info.last_error is None and info.fetched_at is not None:
                return Verdict(FEED)
            failed = (
                f"This address was fetched less than a minute ago and the fetch failed "
                f"({shown_to(info.last_error, admin)}). Try again in a minute."
            )
            raise TooManyRequests(
                UNDER_WAY if info.last_error is None else failed,
                seconds(info.checked_at + WINDOW_US - now),
            )
        await take_turn(conn, user_id, now, self.per_user)
        if not await feed_checks.claim(conn, url_key, user_id, now):
            raise TooManyRequests(UNDER_WAY, seconds(WINDOW_US))
        return None

    async def refresh(self, user_id: int, url_key: str, feed_url: str) -> bool:
        """Fetch one of the user's feeds now (a person's `Refresh`): True when it was
        fetched (or tried), False when it was fetched less than a minute ago or is
        being fetched (no fetch, nothing counted); TooManyRequests past the user's
        bound."""
        now = self.clock()
        async with self.db.write(user=user_id) as conn:
            await take_turn(conn, user_id, now, self.per_user)
            due = await self.fetcher.claim_refresh(conn, url_key, feed_url, now)
            if due is None:
                return False
            await user_fetches.record(conn, user_id, now, user_fetches.REFRESH)
        await self.fetcher.fetch_one(due, asking=user_id)
        return True

    async def _fetch(self, feed_url: str) -> Verdict:
        try:
            fetched = await self.fetcher.client.fetch(feed_url, None, None)
        except HttpStatusError as exc:
            if 400 <= exc.status < 500:
                return Verdict(NOT_A_FEED, f"the server answers {exc}: there is no feed there")
            return Verdict(UNREACHABLE, str(exc))
        except FetchError as exc:
            if is_refusal(str(exc)):  # the detail for the log; the page says less
                log.info("a feed address to subscribe to was refused: %s", exc)
            return Verdict(UNREACHABLE, str(exc))
        try:
            learned = await self.fetcher.parse(fetched)
        except NotAFeed as exc:
            kind = fetched.content_type.split(";", 1)[0].strip()
            return Verdict(NOT_A_FEED, f"{exc}" + (f" (it is {kind})" if kind else ""))
        return Verdict(FEED, learned=learned)
