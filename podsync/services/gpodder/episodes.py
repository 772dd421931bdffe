"""Episode actions of the gpodder layer (gpodder spec 5.7, 5.8, 6.6). No HTTP here.

An upload skips what it cannot use instead of failing: AntennaPod and gPodder resend
their whole queue until an upload succeeds, so one poisoned item refused with a 400
would block every later one forever.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from podsync import timestamps
from podsync.config import GpodderConfig
from podsync.feeds import (
    MAX_GUID,
    InvalidFeedUrl,
    check_feed_url,
    has_bad_characters,
    is_plain_url,
    url_key,
)
from podsync.services.gpodder import cursor
from podsync.services.gpodder.bounds import UploadBounds
from podsync.services.gpodder.devices import DEVICE_ID
from podsync.services.gpodder.pulls import ActionPieces
from podsync.storage.engine import Connection, Engine
from podsync.store import episode_reads, episodes, meta
from podsync.store.episode_reads import ActionRow
from podsync.store.episodes import EpisodeAction, Feed

log = logging.getLogger("podsync.gpodder")

ACTIONS = frozenset({"new", "download", "play", "delete", "flattr"})
_OTHER_SCHEMES = re.compile(r"^(feed|itpc|pcast)://", re.IGNORECASE)
INT32_MAX = 2**31 - 1
FUTURE_SLACK_US = 86_400_000_000  # one day
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A time without a zone is UTC: subtracting the naive epoch gives the same count as
# attaching UTC and subtracting the aware one, at a quarter of the cost.
_NAIVE_EPOCH = datetime(1970, 1, 1)
_ONE_MICRO = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - _EPOCH


def normalise_url(raw: str) -> str | None:
    """A feed or episode URL as stored: trimmed, feed:// itpc:// pcast:// read as
    http://. None when it is still not an absolute http(s) URL (mygpo's rules)."""
    if is_plain_url(raw):  # nearly every URL: nothing to trim, rewrite or check further
        return raw
    url = _OTHER_SCHEMES.sub("http://", raw.strip(), count=1)
    try:
        return check_feed_url(url)
    except InvalidFeedUrl:
        return None


def parse_client_time(value: Any, received_at: int) -> int:
    """An action's client moment in microseconds: ISO 8601 (no zone means UTC; `Z`,
    offsets and fractions accepted) or epoch seconds; anything else is receipt time."""
    try:
        if isinstance(value, str):
            moment = datetime.fromisoformat(value.strip())
            epoch = _NAIVE_EPOCH if moment.tzinfo is None else _EPOCH
            micros = (moment - epoch) // _ONE_MICRO
        elif isinstance(value, int | float) and not isinstance(value, bool):
            micros = int(value * 1_000_000)
        else:
            return received_at
    except (ValueError, OverflowError):
        return received_at
    # More than a day ahead of the server: a wrong clock, and a time that would win
    # every aggregated view forever (contract 14); the time of receipt instead.
    if not timestamps.MIN_US <= micros <= received_at + FUTURE_SLACK_US:
        return received_at
    return micros


class SkipItem(ValueError):
    """An uploaded item that cannot be stored; the reason is logged, not answered."""


def _play_field(item: dict[str, Any], name: str) -> int | None:
    value = item.get(name)
    if type(value) is not int or value < 0:
        return None  # AntennaPod sends -1 at times; gPodder a bare play
    if value > INT32_MAX:
        raise SkipItem(f"{name} {value} is out of range")
    return value


def _optional_text(item: dict[str, Any], name: str, limit: int) -> str | None:
    value = item.get(name)
    if not isinstance(value, str) or not value or len(value) > limit:
        return None
    return None if has_bad_characters(value) else value


def _device(item: dict[str, Any]) -> str | None:
    """The action's device id when it is a valid one; an action with any other is kept
    without a device."""
    value = item.get("device")
    # DEVICE_ID admits 1 to 64 characters of [A-Za-z0-9_.-]: _optional_text's checks.
    return value if isinstance(value, str) and DEVICE_ID.fullmatch(value) else None


def _item_url(item: dict[str, Any], field: str, rewrites: dict[str, str]) -> str:
    raw = item.get(field)
    if not isinstance(raw, str):
        raise SkipItem(f"{field} is missing or not a string")
    url = normalise_url(raw)
    if url != raw and not has_bad_characters(raw):
        rewrites[raw] = url or ""
    if url is None:
        raise SkipItem(f"{field} is not an http(s) URL")
    return url


def parse_item(item: Any, received_at: int, rewrites: dict[str, str]) -> EpisodeAction:
    """One uploaded action, or SkipItem. URL rewrites (and `""` for a URL that could
    not be used) are added to `rewrites`, the response's update_urls."""
    if not isinstance(item, dict):
        raise SkipItem("not an object")
    podcast = _item_url(item, "podcast", rewrites)
    episode = _item_url(item, "episode", rewrites)
    action = item.get("action")
    if not isinstance(action, str) or (action := action.lower()) not in ACTIONS:
        raise SkipItem("unknown action")
    position = _play_field(item, "position") if action == "play" else None
    # started and total mean nothing without a position (AntennaPod needs all three)
    has_position = position is not None
    # Positional, in EpisodeAction's field order (keywords cost a third more here).
    return EpisodeAction(
        0,  # seq
        podcast,
        url_key(podcast),
        episode,
        action,
        parse_client_time(item.get("timestamp"), received_at),
        _device(item),
        _optional_text(item, "guid", MAX_GUID),
        _play_field(item, "started") if has_position else None,
        position,
        _play_field(item, "total") if has_position else None,
    )


@dataclass(frozen=True)
class Upload:
    stored: int  # items accepted (including ones already stored before)
    skipped: int
    update_urls: list[list[str]]
    before: int  # the user's highest episode seq before and after the write
    after: int


@dataclass(frozen=True)
class Imported:
    added: int
    already: int  # stored before (an earlier import, or the apps' own uploads)
    refused_device: int  # naming a new device past gpodder.max_devices_per_user


class Pull:
    """A pull's answer: its actions in pieces (`pieces.first` read already, the rest
    read as they are written) and its `timestamp`, known once they are all read."""

    def __init__(self, pieces: ActionPieces, high: int, page_size: int) -> None:
        self.pieces = pieces
        self.high = high
        self.page_size = page_size

    @property
    def timestamp(self) -> int:
        # A full page ends at its last row, so the next call resumes right after it.
        full = self.pieces.count == self.page_size
        return cursor.encode(self.pieces.after if full else self.high)


# Podcasts' rows (episode_feeds) uploads remember, so the next upload need not look
# them up (it names up to a thousand). A row never goes away but with its user. The
# memo is bounded in rows, not only in users: a user's phones that moved through
# thousands of podcasts kept every one of them, in each worker, for good. Past
# FEEDS_PER_USER a user's oldest rows go; past FEEDS_REMEMBERED in all, the users
# who uploaded least recently (about 300 bytes a row).
FEEDS_PER_USER = 2000
FEEDS_REMEMBERED = 20_000


class EpisodeService:
    def __init__(self, db: Engine, page_size: int, bounds: UploadBounds | None = None) -> None:
        self.db = db
        self.page_size = page_size
        self.bounds = bounds or UploadBounds(GpodderConfig())
        self._feeds: OrderedDict[int, dict[str, Feed]] = OrderedDict()
        self._feeds_total = 0  # rows in all of self._feeds

    def _known_feeds(self, user_id: int) -> dict[str, Feed]:
        known = self._feeds.pop(user_id, None) or {}
        self._feeds[user_id] = known  # the most recent last
        return known

    def _remember(self, user_id: int, known: dict[str, Feed], feeds: dict[str, Feed]) -> None:
        """Add an upload's committed feed rows to the user's memo, within the bounds."""
        if self._feeds.get(user_id) is not known:
            return  # forgotten meanwhile (other users' uploads): nothing to add to
        before = len(known)
        known.update(feeds)
        while len(known) > FEEDS_PER_USER:
            del known[next(iter(known))]  # the oldest remembered first
        self._feeds_total += len(known) - before
        while self._feeds_total > FEEDS_REMEMBERED and len(self._feeds) > 1:
            _, gone = self._feeds.popitem(last=False)
            self._feeds_total -= len(gone)

    @property
    def feeds_remembered(self) -> int:
        """Podcast rows in the memo, all users together (for the tests of its bound)."""
        return self._feeds_total

    async def upload(self, user_id: int, items: list[Any], device_id: str | None = None) -> Upload:
        """Store the usable items. `device_id`: the device every action is stored
        under, whatever its item says (the Nextcloud API: one device per app password)."""
        now = timestamps.now_us()
        rewrites: dict[str, str] = {}
        parsed: list[EpisodeAction] = []
        skipped = 0
        for index, item in enumerate(items):
            try:
                action = parse_item(item, now, rewrites)
            except SkipItem as exc:
                skipped += 1
                log.info("episode upload of user %d: item %d skipped: %s", user_id, index, exc)
                continue
            if device_id is not None:
                action.device_id = device_id
            parsed.append(action)
        async with self.db.write() as conn:
            # One writer per user at a time (on PostgreSQL too): a user's seqs are
            # taken and committed in order, so a puller's cursor never steps past a
            # row still to commit.
            await meta.lock_user(conn, user_id)
            before = await episodes.max_seq(conn, user_id)
            kept, refused = await self.bounds.admit(conn, user_id, parsed, now)
            known = self._known_feeds(user_id)
            batch = await episodes.resolve(conn, user_id, kept, known)
            await self.bounds.check_actions(conn, user_id, len(batch.new))
            stored = await episodes.store(conn, batch, now)
        self._remember(user_id, known, batch.feeds)  # committed
        return Upload(
            stored=len(kept),
            skipped=skipped + refused,
            update_urls=[[old, new] for old, new in rewrites.items()],
            before=before,
            after=stored.last_seq or before,
        )

    async def store_imported(self, user_id: int, parsed: list[EpisodeAction]) -> Imported:
        """Store actions read from another server (already parsed) under the same
        rules as an upload, counting those stored before. LimitExceeded when they
        would pass the action bound: nothing is written."""
        now = timestamps.now_us()
        async with self.db.write() as conn:
            await meta.lock_user(conn, user_id)
            kept, refused = await self.bounds.admit(conn, user_id, parsed, now)
            known = self._known_feeds(user_id)
            batch = await episodes.resolve(conn, user_id, kept, known)
            await self.bounds.check_actions(conn, user_id, len(batch.new))
            await episodes.store(conn, batch, now)
        self._remember(user_id, known, batch.feeds)  # committed
        return Imported(added=len(batch.new), already=batch.already, refused_device=refused)

    async def pull(
        self,
        user_id: int,
        since: str | None,
        podcast: str | None,
        device_id: str | None,
        aggregated: bool,
    ) -> Pull:
        url = normalise_url(podcast) if podcast is not None else None
        podcast_key = url_key(url) if url is not None else None
        # A filter no stored action can satisfy (a podcast that is not a URL, a device
        # id no device can have: a NUL byte, say) matches nothing. It never reaches
        # the database, which may not even store such text (PostgreSQL refuses NUL).
        matches_nothing = (podcast is not None and url is None) or (
            device_id is not None and not DEVICE_ID.fullmatch(device_id)
        )
        # The range, the podcast and the first piece from one read transaction (a
        # piece is a few ms of work, on the loop; pulls.py).
        async with self.db.snapshot() as conn:
            high = await episodes.max_seq(conn, user_id)
            threshold = cursor.decode(since, high)
            feed = None
            if podcast_key is not None and not matches_nothing:
                feed = await episode_reads.feed_id(conn, user_id, podcast_key)
                matches_nothing = feed is None

            async def reader(c: Connection, after: int, count: int) -> list[ActionRow]:
                return await episode_reads.page(
                    c,
                    user_id,
                    window_after=threshold,
                    after_seq=after,
                    upto_seq=high,
                    feed=feed,
                    device_id=device_id,
                    aggregated=aggregated,
                    limit=count,
                )

            pieces = ActionPieces(self.db, user_id, reader, threshold, self.page_size)
            if matches_nothing:
                pieces.done = True
            else:
                await pieces.start(conn)
        return Pull(pieces, high, self.page_size)
