"""The one write path of episode actions: an app's upload (gpodder, Nextcloud), an
import from another server and the web player all store typed `EpisodeAction`s
through `EpisodeWrites.record`, under the same per-user lock, device and action
bounds and duplicate rules. No HTTP here, and no wire format: an upload's items are
parsed (`items.parse_item`) before they come here.

A write may also be recorded as a device of its own that is made on first use
(`AsDevice`, the web player's `web`), and run more work of its caller in the same
transaction (`then`): one write per save, whatever it touches.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from podsync import timestamps
from podsync.config import GpodderConfig
from podsync.services.devices import check_new_device
from podsync.services.episodes import sessions
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.feed_memo import FeedMemo
from podsync.services.episodes.items import SkipItem, parse_item
from podsync.storage import loop_share
from podsync.storage.engine import Connection, Engine
from podsync.store import devices, episode_actions, episodes, listening_totals, meta
from podsync.store.episodes import Batch, EpisodeAction

log = logging.getLogger("podsync.gpodder")

# More work of the caller inside the write's transaction, after the actions.
Then = Callable[[Connection], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class AsDevice:
    """The device every action of a write is stored under, made (captioned so) when
    the user lacks it; LimitExceeded past gpodder.max_devices_per_user."""

    device_id: str
    caption: str


@dataclass(frozen=True, slots=True)
class Recorded:
    """What one write did."""

    kept: int  # actions admitted (including ones stored before)
    refused_device: int  # naming a new device past the device bound
    added: int  # stored now
    before: int  # the user's highest episode seq before and after the write
    after: int


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


class EpisodeWrites:
    def __init__(self, db: Engine, bounds: UploadBounds | None = None) -> None:
        self.db = db
        self.bounds = bounds or UploadBounds(GpodderConfig())
        self.feeds = FeedMemo()  # the podcasts' rows of recent writes

    async def record(
        self,
        user_id: int,
        actions: Sequence[EpisodeAction],
        now: int,
        *,
        as_device: AsDevice | None = None,
        then: Then | None = None,
        session: str | None = None,
    ) -> Recorded:
        """Store `actions` in one write: the devices they name made while the bound
        allows (the others' actions skipped), the ones stored before not stored twice,
        LimitExceeded (nothing written) past the action bound. What the plays listened
        to for the first time goes into the statistics' running totals. A long write
        lets the process's other requests in now and then (`loop_share`).

        `session`: the listening session (a token its player made) that the one play
        of `actions` saves. The session's play stored before is replaced, not kept
        beside it: the new one takes the user's next seq, so every puller whose
        cursor passed the old one gets it at its next pull."""
        with loop_share.sharing():
            return await self._record(user_id, actions, now, as_device, then, session)

    async def _record(
        self,
        user_id: int,
        actions: Sequence[EpisodeAction],
        now: int,
        as_device: AsDevice | None,
        then: Then | None,
        session: str | None,
    ) -> Recorded:
        async with self.db.write(user=user_id) as conn:
            # One writer per user at a time (on PostgreSQL too): a user's seqs are
            # taken and committed in order, so a puller's cursor never steps past a
            # row still to commit.
            await meta.lock_user(conn, user_id, keyed_plans=True)
            if as_device is not None:
                await self._make_device(conn, user_id, as_device, now)
            before = await episode_actions.max_seq(conn, user_id)
            kept, refused = await self.bounds.admit(conn, user_id, actions, now)
            known = self.feeds.known(user_id)
            batch = await episodes.resolve(conn, user_id, kept, known)
            if session is not None:
                await sessions.replace_earlier_save(conn, user_id, batch, session)
            await self.bounds.check_actions(conn, user_id, len(batch.new))
            stored = await episodes.store(conn, batch, now)
            await listening_totals.count_plays(
                conn,
                user_id,
                await sessions.plays_of(batch),
                stored_from=stored.first_seq,
                created=batch.created,
                keep_rows=session is not None,  # the session is named on the row next
            )
            if session is not None:
                await sessions.remember(conn, user_id, batch, session, stored.last_seq)
            if then is not None:
                await then(conn)
        self.feeds.remember(user_id, batch.feeds)  # committed
        return _recorded(kept, refused, batch, before, stored.last_seq or before)

    async def _make_device(
        self, conn: Connection, user_id: int, device: AsDevice, now: int
    ) -> None:
        if await devices.exists(conn, user_id, device.device_id):
            return  # an existing device is never changed
        await check_new_device(conn, user_id, device.device_id, self.bounds.max_devices)
        await devices.upsert(conn, user_id, device.device_id, device.caption, None, now)

    async def upload(self, user_id: int, items: list[Any], device_id: str | None = None) -> Upload:
        """Store the usable items of an app's upload. `device_id`: the device every
        action is stored under, whatever its item says (the Nextcloud API: one device
        per app password)."""
        with loop_share.sharing():
            return await self._upload(user_id, items, device_id)

    async def _upload(self, user_id: int, items: list[Any], device_id: str | None) -> Upload:
        now = timestamps.now_us()
        rewrites: dict[str, str] = {}
        parsed: list[EpisodeAction] = []
        skipped = 0
        for first, piece in loop_share.pieces(items):
            if first:
                await loop_share.share()
            for index, item in enumerate(piece, first):
                try:
                    action = parse_item(item, now, rewrites)
                except SkipItem as exc:
                    skipped += 1
                    log.info("episode upload of user %d: item %d skipped: %s", user_id, index, exc)
                    continue
                if device_id is not None:
                    action.device_id = device_id
                parsed.append(action)
        done = await self.record(user_id, parsed, now)
        return Upload(
            stored=done.kept,
            skipped=skipped + done.refused_device,
            update_urls=[[old, new] for old, new in rewrites.items()],
            before=done.before,
            after=done.after,
        )

    async def store_imported(self, user_id: int, parsed: list[EpisodeAction]) -> Imported:
        """Store actions read from another server under the same rules as an upload,
        counting those stored before. LimitExceeded when they would pass the action
        bound: nothing is written."""
        done = await self.record(user_id, parsed, timestamps.now_us())
        return Imported(
            added=done.added, already=done.kept - done.added, refused_device=done.refused_device
        )


def _recorded(
    kept: list[EpisodeAction], refused: int, batch: Batch, before: int, after: int
) -> Recorded:
    return Recorded(len(kept), refused, len(batch.new), before, after)
