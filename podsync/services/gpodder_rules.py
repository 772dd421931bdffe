"""Subscribe/unsubscribe commands of the gpodder layer, applied by the one set of
sync rules (services/sync.py's `_Batch`) in one write transaction.

TEMPORARY BRIDGE: main is turning services/sync.py into a pure rules module fed with
typed commands (`podsync.rules`). Until it lands, this module drives the existing
batch class directly; then it shrinks to a call of that API. Nothing here restates
a rule: matching (sync_id, url key, guid), last-write-wins, the change_seq and the
writer are all `_Batch`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from podsync import timestamps
from podsync.db import Database
from podsync.feeds import derive_guid, url_key
from podsync.services.sync import SUBSCRIPTION, Action, _Batch, _Valid
from podsync.store import gpodder_feed
from podsync.store import subscriptions as store


@dataclass(frozen=True)
class Subscribe:
    feed_url: str


@dataclass(frozen=True)
class Unsubscribe:
    feed_url: str
    sync_id: str | None = None  # the entity an old (aliased) URL belonged to


@dataclass(frozen=True)
class RulesOutcome:
    statuses: list[str]  # applied / ignored / rejected, one per command
    stored_urls: list[str | None]  # the entity's feed_url after the batch
    before: int  # the user's highest change_seq before and after the write
    after: int


class SubscriptionRules:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def apply(
        self, user_id: int, client_id: str, commands: Sequence[Subscribe | Unsubscribe]
    ) -> RulesOutcome:
        """Apply server-stamped commands in order, in one transaction. Each is stamped
        max(server now, entity.last_updated + 1 us) (gpodder spec 6.2): a gpodder
        write carries no time and always wins by arrival, even over an OPA client
        whose clock runs ahead."""
        now = timestamps.now_us()
        sync_ids = {c.sync_id for c in commands if isinstance(c, Unsubscribe) and c.sync_id}
        keys = {url_key(c.feed_url) for c in commands}
        guids = {derive_guid(c.feed_url) for c in commands}
        async with self.db.write() as conn:
            before = await gpodder_feed.max_change_seq(conn, user_id)
            entities = await store.find_matching(conn, user_id, sync_ids, keys, guids)
            batch = _Batch(user_id, client_id, entities)
            statuses: list[str] = []
            touched: list[str | None] = []
            for index, command in enumerate(commands):
                subscribe = isinstance(command, Subscribe)
                sync_id = None if subscribe else command.sync_id  # type: ignore[union-attr]
                action = Action(
                    index=index,
                    action_id=None,
                    type=SUBSCRIPTION,
                    action="subscribe" if subscribe else "unsubscribe",
                    occurred_at="",
                    data={"feed_url": command.feed_url},
                )
                valid = _Valid(action, now, sync_id, sync_id is not None, command.feed_url, None)
                target = batch._target(valid, fall_back=True)
                if target is not None and target.last_updated >= now:
                    valid = _Valid(
                        action,
                        target.last_updated + 1,
                        sync_id,
                        sync_id is not None,
                        command.feed_url,
                        None,
                    )
                outcome = batch.apply(valid)
                statuses.append(outcome.status)
                touched.append(outcome.sync_id)
            await batch.save(conn, now)
            after = await gpodder_feed.max_change_seq(conn, user_id)
        stored = [batch.by_sync_id[s].feed_url if s else None for s in touched]
        return RulesOutcome(statuses, stored, before, after)
