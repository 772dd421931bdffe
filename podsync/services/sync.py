"""Applying a batch of sync commands: one transaction around the pure rules.

`SyncService.apply` is the one way subscriptions change, whoever writes: the Open
Podcast API, OPML import and the gpodder layer all come here with typed commands
(`podsync.rules`). In one write block it checks action ids (idempotency), loads the
entities the commands can touch, runs the rules, saves what changed and records
the action ids. With `render`, the caller's response is built inside the same
block, so nothing that can fail happens after the COMMIT.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from podsync import feeds, rules, timestamps
from podsync.config import SyncConfig
from podsync.errors import LimitExceeded
from podsync.model import RecordedAction, Subscription
from podsync.rules import APPLIED, IGNORED, REJECTED, REUSED_ACTION_ID, Command, Outcome
from podsync.storage.engine import Engine
from podsync.store import Connection, meta
from podsync.store import actions as action_log
from podsync.store import subscriptions as store
from podsync.store import sync_batch as batch_store

T = TypeVar("T")
_US_PER_DAY = 86_400_000_000
# Action ids forgotten per write of the hourly pruning (the loop held about 20 ms).
PRUNE_CHUNK = 2000

__all__ = ["APPLIED", "IGNORED", "REJECTED", "ActionKey", "BatchOutcome", "SyncService"]


@dataclass(frozen=True, slots=True)
class ActionKey:
    """A client's action_id (canonical form) and what the action was (a fingerprint of
    its type, action, occurred_at and data), for idempotency."""

    action_id: str
    fingerprint: str


@dataclass(slots=True)  # not frozen, for speed: see rules.Subscribe
class CommandResult:
    status: str
    reason: str | None
    entity: Subscription | None  # the entity's state after the whole batch
    created: bool = False


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    results: list[CommandResult]  # one per command, in the order given
    # The user's highest change_seq before and after the batch (0: none yet): the
    # gpodder layer answers its cursor from these (gpodder.md 4.4).
    user_seq_before: int
    user_seq_after: int


def _identity(outcome: BatchOutcome) -> BatchOutcome:
    return outcome


class SyncService:
    def __init__(self, db: Engine, config: SyncConfig) -> None:
        self.db = db
        self.config = config

    async def apply(
        self,
        user_id: int,
        client_id: str | None,
        commands: Sequence[Command],
        keys: Sequence[ActionKey | None] | None = None,
        now: int | None = None,
        strict: bool = False,
    ) -> BatchOutcome:
        """Apply `commands` in one transaction; `keys[i]` is command i's action id.
        A subscribe past a limit is rejected on its own, or, with `strict`, the whole
        batch is refused with LimitExceeded and nothing is written."""
        return await self.apply_rendered(user_id, client_id, commands, _identity, keys, now, strict)

    async def apply_rendered(
        self,
        user_id: int,
        client_id: str | None,
        commands: Sequence[Command],
        render: Callable[[BatchOutcome], T],
        keys: Sequence[ActionKey | None] | None = None,
        now: int | None = None,
        strict: bool = False,
    ) -> T:
        """`apply`, then `render(outcome)` inside the same transaction: if rendering
        fails, nothing is saved, and what is returned was built before the COMMIT."""
        now = timestamps.now_us() if now is None else now
        keys = keys if keys is not None else [None] * len(commands)
        # The per-command checks need no database: run them before taking the writer,
        # so that other batches' writes are not held up by this batch's CPU work.
        checked = [
            rules.Invalid(reason)
            if (reason := rules.check(c, now, self.config.max_clock_skew))
            else c
            for c in commands
        ]
        retention = now - self.config.action_id_retention_days * _US_PER_DAY
        ids = [k.action_id for k in keys if k is not None]
        # What the rules would compute inside the write turn, computed here: the keys
        # of the entities any command can touch (those of commands found replayed
        # below too: loading a few entities more changes no outcome) and the sync ids
        # of the entities the batch may create.
        sync_ids, url_keys, guids = rules.lookup_keys(checked)
        other_guids = rules.names_other_guids(checked)
        subscribes = sum(isinstance(c, rules.Subscribe) for c in checked)
        new_ids = feeds.new_uuid7s(subscribes)
        async with self.db.write(user=user_id) as conn:
            # Another process's batch for this user waits until this one commits.
            await meta.lock_user(conn, user_id, keyed_plans=True, row_taken_next=True)
            loaded = await batch_store.load(
                conn,
                user_id,
                ids,
                retention,
                (sync_ids, url_keys, guids),
                subscribes > 0,
                index_guids=other_guids,
            )
            recorded, entities = loaded.recorded, loaded.entities
            # Which commands run: each action id once (its first occurrence), and only
            # when it was not recorded before.
            first_of: dict[str, int] = {}
            to_run: list[int] = []
            for i, key in enumerate(keys):
                if key is not None:
                    if key.action_id in recorded or key.action_id in first_of:
                        continue
                    first_of[key.action_id] = i
                to_run.append(i)
            run = [checked[i] for i in to_run]
            if strict:
                # Run without limits, then refuse the whole batch if its result would
                # pass one: the caller answers 400 and nothing is written.
                plan = rules.Plan(user_id, client_id, entities, now, new_ids=new_ids)
                ran = dict(zip(to_run, plan.apply_all(run), strict=True))
                await self._check_limits(conn, user_id, plan, loaded.entity_count)
            else:
                subscribes = sum(isinstance(c, rules.Subscribe) for c in run)
                room, entity_room = await self._rooms(
                    conn, user_id, subscribes, loaded.entity_count
                )
                plan = rules.Plan(
                    user_id, client_id, entities, now, room, entity_room, new_ids=new_ids
                )
                ran = dict(zip(to_run, plan.apply_all(run), strict=True))
            records = [
                RecordedAction(
                    action_id,
                    ran[i].status,
                    ran[i].reason,
                    ran[i].sync_id,
                    now,
                    keys[i].fingerprint,  # type: ignore[union-attr]
                )
                for action_id, i in first_of.items()
            ]
            saved = await batch_store.save(
                conn, user_id, plan.changes(), now, records, loaded.expired
            )
            seq_before = loaded.seq
            seq_after = max((s.change_seq for s in saved.values()), default=seq_before)
            current = {**{s.sync_id: s for s in entities}, **saved}
            results = [_result(i, keys, ran, first_of, recorded, current) for i in range(len(keys))]
            return render(BatchOutcome(results, seq_before, seq_after))

    async def _rooms(
        self, conn: Connection, user_id: int, subscribes: int, entities: int | None
    ) -> tuple[int | None, int | None]:
        """How many more subscribed feeds and entities the user may have (None: more
        than this batch's `subscribes` could use, so no need to count); `entities`:
        the user's count of entities, when read already."""
        if not subscribes:
            return None, None
        y = self.config
        if entities is None:
            entities = await store.count_entities(conn, user_id)
        entity_room = y.max_entities_per_user - entities
        # Subscribed feeds are a subset of the entities: their count is read only
        # when the cheap bound does not settle it.
        room = None
        if entities + subscribes > y.max_subscriptions_per_user:
            room = y.max_subscriptions_per_user - await store.count_subscribed(conn, user_id)
        return room, (entity_room if entity_room < subscribes else None)

    async def _check_limits(
        self, conn: Connection, user_id: int, plan: rules.Plan, before: int | None
    ) -> None:
        """LimitExceeded when the plan's result passes a limit (`before`: the user's
        count of entities before the batch, when read already)."""
        y = self.config
        if not plan.created and plan.subscribed_delta <= 0:
            return
        if before is None:  # the plan is not saved yet
            before = await store.count_entities(conn, user_id)
        entities = before + len(plan.created)
        if entities > y.max_entities_per_user:
            raise LimitExceeded(entity_limit_message(entities, y.max_entities_per_user))
        # The feeds subscribed before are a subset of the entities before: their count,
        # a scan of the user's subscribed rows, is read only when that bound does not
        # settle it (a push to a user far from the limit reads one row).
        delta = plan.subscribed_delta
        if delta > 0 and before + delta > y.max_subscriptions_per_user:
            subscribed = await store.count_subscribed(conn, user_id) + delta
            if subscribed > y.max_subscriptions_per_user:
                raise LimitExceeded(
                    subscription_limit_message(subscribed, y.max_subscriptions_per_user)
                )

    async def prune_action_log(self, now: int | None = None) -> int:
        """Forget action ids older than the retention; returns how many were removed.
        PRUNE_CHUNK at a time, each in a short write of its own: the ids of an hour's
        big import went in one statement (0.3-0.5 s on the event loop at 100,000)."""
        now = timestamps.now_us() if now is None else now
        cutoff = now - self.config.action_id_retention_days * _US_PER_DAY
        removed = 0
        while True:
            async with self.db.write() as conn:
                gone = await action_log.prune(conn, cutoff, PRUNE_CHUNK)
            removed += gone
            if gone < PRUNE_CHUNK:
                return removed


def subscription_limit_message(count: int, limit: int) -> str:
    return (
        f"subscription limit reached: this would make {count} subscribed feeds, "
        f"the limit is {limit} (sync.max_subscriptions_per_user); nothing was changed"
    )


def entity_limit_message(count: int, limit: int) -> str:
    return (
        f"feed limit reached: this would make {count} feeds kept for this account "
        f"(subscribed or unsubscribed), the limit is {limit} (sync.max_entities_per_user); "
        f"nothing was changed"
    )


def _result(
    i: int,
    keys: Sequence[ActionKey | None],
    ran: dict[int, Outcome],
    first_of: dict[str, int],
    recorded: dict[str, RecordedAction],
    current: dict[str, Subscription],
) -> CommandResult:
    """Command i's result: its own outcome, or, for an action id seen before (in an
    earlier batch or earlier in this one), the first outcome again when the action
    is the same, else a rejection (contract section 6, revision 2)."""
    key = keys[i]
    if key is None or first_of.get(key.action_id) == i:
        outcome = ran[i]
    else:
        first = recorded.get(key.action_id)
        if first is not None:
            # A record from before revision 2 has no fingerprint: a replay, as then.
            same = first.fingerprint is None or first.fingerprint == key.fingerprint
            outcome = Outcome(first.status, first.reason, first.sync_id)
        else:
            j = first_of[key.action_id]
            same = keys[j].fingerprint == key.fingerprint  # type: ignore[union-attr]
            outcome = replace(ran[j], created=False)
        if not same:
            return CommandResult(REJECTED, REUSED_ACTION_ID, None)
    entity = current.get(outcome.sync_id) if outcome.sync_id else None
    return CommandResult(outcome.status, outcome.reason, entity, outcome.created)
