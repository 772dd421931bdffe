"""The reads and the writes of one sync batch, in as few round trips as the engine
allows.

On SQLite a statement is a function call, so the batch calls the functions of
`actions`, `subscriptions` and `users` one by one. On PostgreSQL each statement is a
round trip while the batch holds its user's lock (`meta.lock_user`, one round trip
with the BEGIN), so what the batch reads after taking it is one statement, and what
it writes is one statement (data-modifying WITH clauses): with the COMMIT, four
round trips where there were eleven.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from podsync.errors import Unauthorized
from podsync.model import RecordedAction, Subscription, subscription_view
from podsync.store import Connection, subscriptions
from podsync.store import actions as action_log
from podsync.store.meta import ACCOUNT_GONE
from podsync.store.subscriptions import _COLUMNS
from podsync.store.value_lists import each_key


@dataclass(frozen=True, slots=True)
class Loaded:
    recorded: dict[str, RecordedAction]  # the batch's action ids seen before, by id
    entities: list[Subscription]  # the user's entities the batch can touch, by id
    seq: int  # the user's highest change_seq (0: none yet)
    entity_count: int | None  # the user's entities (None: not read, not asked for)
    # The batch's action ids still in the log though past retention (PostgreSQL only:
    # every other id of the batch is known absent, so its record is a plain INSERT).
    expired: frozenset[str] = frozenset()


async def load(
    conn: Connection,
    user_id: int,
    action_ids: Sequence[str],
    newer_than: int,
    keys: tuple[set[str], set[str], set[str]],
    count: bool,
    index_guids: bool = True,
) -> Loaded:
    """What a batch reads under its user's lock: the action ids recorded after
    `newer_than`, the entities with any of the sync ids, url keys or guids of `keys`
    or a sync id a recorded action names, the user's highest change_seq and, with
    `count`, the user's number of entities. `index_guids`: whether a guid of `keys`
    may be derived from none of the batch's URLs (`rules.names_other_guids`); the
    user's rows left out of SQLite's guid index are put in it first."""
    sync_ids, url_keys, guids = keys
    if conn.dialect == "postgresql":
        return await _load_in_one(conn, user_id, action_ids, newer_than, keys)
    if index_guids and guids:
        await subscriptions.index_guids(conn, user_id)
    recorded = await action_log.get_many(conn, user_id, action_ids, newer_than)
    named = {r.sync_id for r in recorded.values() if r.sync_id}
    entities = await subscriptions.find_matching(conn, user_id, sync_ids | named, url_keys, guids)
    seq = await subscriptions.user_seq(conn, user_id)
    entity_count = await subscriptions.count_entities(conn, user_id) if count else None
    return Loaded(recorded, entities, seq, entity_count)


def _matching(column: str, keys: str) -> str:
    """The user's entities whose `column` is one of the array `keys`, as an array of
    rows: each key looked up on its own, by an index that leads with `column` and
    holds user_id (for the url key and the guid, the index of both; for the sync id,
    its own unique index).

    Written as a pair of row comparisons on (column, user_id) rather than `user_id = ?
    AND column = ANY(keys)`: an index on the user can serve `user_id = ?` but no
    index that does not lead with `column` can serve these. A plan made while the
    table was empty (a new instance, before autovacuum's first ANALYZE) saw every
    index cost the same and looked the keys up through an index on the user alone,
    reading all of the user's rows on every batch, a join on (column, user_id) as
    much as the array; the comparisons leave it no such choice. OFFSET 0 keeps each
    lookup a subquery of its own: flattened into a join, it could be one pass over
    a whole index matched against the keys."""
    return (
        f"ARRAY(SELECT ROW(entity.*) FROM unnest({keys}) AS wanted(key) CROSS JOIN LATERAL ("
        f"SELECT {_COLUMNS} FROM subscriptions "
        f"WHERE ({column}, user_id) >= (wanted.key, ?) AND ({column}, user_id) <= (wanted.key, ?) "
        "OFFSET 0) AS entity)"
    )


# The batch's sync ids and those its recorded action ids name.
_NAMED = (
    "(?::text[] || ARRAY(SELECT sync_id FROM found WHERE sync_id IS NOT NULL AND received_at > ?))"
)
_FOUND = each_key(
    [("action_id", "text")],
    "SELECT action_id, status, reason, sync_id, received_at, fingerprint FROM actions "
    "WHERE user_id = ? AND action_id = k.action_id",
)
# Every recorded row of the batch's action ids (`_FOUND`, each id on its own), those
# past retention too (told apart in Python): under the user's lock, an id not found
# is not in the log, and the write records it with a plain INSERT. The user's last
# change number by the index of (user_id, change_seq) read backwards: max() let a
# plan made on an empty table read all of the user's rows for it. The user's row,
# taken FOR KEY SHARE (`meta.lock_user` with keyed_plans leaves it to this
# statement): none, the account was deleted.
_LOAD = f"""
WITH found AS ({_FOUND})
SELECT
    ARRAY(SELECT ROW(found.*) FROM found),
    {_matching("sync_id", _NAMED)},
    {_matching("url_key", "?::text[]")},
    {_matching("guid", "?::text[]")},
    (SELECT change_seq FROM subscriptions WHERE user_id = ? ORDER BY change_seq DESC LIMIT 1),
    (SELECT entity_count FROM users WHERE id = ? FOR KEY SHARE)
"""


async def _load_in_one(
    conn: Connection,
    user_id: int,
    action_ids: Sequence[str],
    newer_than: int,
    keys: tuple[set[str], set[str], set[str]],
) -> Loaded:
    sync_ids, url_keys, guids = (sorted(k) for k in keys)
    row = await conn.fetch_one(
        _LOAD,
        (
            sorted(set(action_ids)),
            user_id,
            sync_ids,
            newer_than,
            user_id,
            user_id,
            url_keys,
            user_id,
            user_id,
            guids,
            user_id,
            user_id,
            user_id,
            user_id,
        ),
    )
    if row[5] is None:
        raise Unauthorized(ACCOUNT_GONE)
    recorded = {r[0]: RecordedAction(*r) for r in row[0] if r[4] > newer_than}
    expired = frozenset(r[0] for r in row[0] if r[4] <= newer_than)
    found = {r[0]: r for column in row[1:4] for r in column}
    entities = [Subscription(*found[i]) for i in sorted(found)]
    return Loaded(recorded, entities, int(row[4] or 0), int(row[5]), expired)


async def save(
    conn: Connection,
    user_id: int,
    plan: tuple[list[Subscription], list[Subscription], list[Subscription]],
    now: int,
    records: Sequence[RecordedAction],
    expired: Collection[str],
) -> dict[str, Subscription]:
    """Write a batch's outcome (`subscriptions.save`: `plan` is its created, changed
    and moved entities) and record its action ids (`actions.record_many`); returns
    the saved entities by sync_id. `expired`: `Loaded.expired`."""
    created, changed, moved = plan
    if conn.dialect == "postgresql" and created and not changed and not moved:
        return await _save_created_in_one(conn, user_id, created, now, records, expired)
    saved = await subscriptions.save(conn, created, changed, moved, now)
    await action_log.record_many(conn, user_id, records)
    return saved


# The columns of a new entity that come from the batch (change_seq and changed_at are
# the statement's) and their types.
_NEW = (
    ("sync_id", "text"),
    ("guid", "text"),
    ("feed_url", "text"),
    ("url_key", "text"),
    ("title", "text"),
    ("subscribed_at", "bigint"),
    ("unsubscribed_at", "bigint"),
    ("last_updated", "bigint"),
    ("last_client_id", "text"),
    ("view", "bytea"),
)
_RECORDED = (
    ("action_id", "text"),
    ("status", "text"),
    ("reason", "text"),
    ("sync_id", "text"),
    ("received_at", "bigint"),
    ("fingerprint", "text"),
)


def _unnest(columns: Iterable[tuple[str, str]]) -> str:
    return "unnest(" + ", ".join(f"?::{kind}[]" for _, kind in columns) + ")"


_NEW_NAMES = ", ".join(name for name, _ in _NEW)
_RECORDED_NAMES = ", ".join(name for name, _ in _RECORDED)
# The user's change numbers and count of entities, the new entities (ids in the
# batch's order: ORDER BY n) and the action ids, in one statement.
_SAVE_CREATED = f"""
WITH seq AS (
    UPDATE users SET change_seq = change_seq + ?, entity_count = entity_count + ?
    WHERE id = ? RETURNING change_seq
), created AS (
    INSERT INTO subscriptions (user_id, {_NEW_NAMES}, change_seq, changed_at)
    SELECT ?::bigint, {_NEW_NAMES}, seq.change_seq - ? + batch.n, ?::bigint
    FROM {_unnest(_NEW)} WITH ORDINALITY AS batch({_NEW_NAMES}, n) CROSS JOIN seq
    ORDER BY batch.n
), recorded AS (
    INSERT INTO actions (user_id, {_RECORDED_NAMES})
    SELECT ?::bigint, * FROM {_unnest(_RECORDED)}{{conflict}}
)
SELECT change_seq FROM seq
"""
# Action ids the batch's read found nowhere are inserted plainly: an upsert checks
# the unique index before each row and logs each row's insert twice (speculative,
# then confirmed). Ids past retention, still in the log, are overwritten.
_SAVE_CREATED_NEW_IDS = _SAVE_CREATED.format(conflict="")
_SAVE_CREATED_EXPIRED_IDS = _SAVE_CREATED.format(
    conflict="""
    ON CONFLICT (user_id, action_id) DO UPDATE SET
    status = excluded.status, reason = excluded.reason, sync_id = excluded.sync_id,
    received_at = excluded.received_at, fingerprint = excluded.fingerprint"""
)


async def _save_created_in_one(
    conn: Connection,
    user_id: int,
    created: Sequence[Subscription],
    now: int,
    records: Sequence[RecordedAction],
    expired: Collection[str],
) -> dict[str, Subscription]:
    for entity in created:
        entity.changed_at = now
        entity.view = subscription_view(entity)
    count = len(created)
    new_rows = [
        (
            s.sync_id,
            s.guid,
            s.feed_url,
            s.url_key,
            s.title,
            s.subscribed_at,
            s.unsubscribed_at,
            s.last_updated,
            s.last_client_id,
            s.view,
        )
        for s in created
    ]
    recorded_rows = [
        (r.action_id, r.status, r.reason, r.sync_id, r.received_at, r.fingerprint) for r in records
    ]
    upsert = any(r.action_id in expired for r in records)
    row = await conn.fetch_one(
        _SAVE_CREATED_EXPIRED_IDS if upsert else _SAVE_CREATED_NEW_IDS,
        (
            count,
            count,
            user_id,
            user_id,
            count,
            now,
            *_columns(new_rows, len(_NEW)),
            user_id,
            *_columns(recorded_rows, len(_RECORDED)),
        ),
    )
    if row is None:  # the user's row is gone: nothing was written
        raise Unauthorized(ACCOUNT_GONE)
    first_seq = int(row[0]) - count + 1
    saved: dict[str, Subscription] = {}
    for offset, entity in enumerate(created):
        entity.change_seq = first_seq + offset
        saved[entity.sync_id] = entity
    return saved


def _columns(rows: Sequence[Sequence[Any]], width: int) -> list[list[Any]]:
    """Rows to one list per column (PostgreSQL's arrays); `width` empty lists for no rows."""
    return [list(column) for column in zip(*rows, strict=True)] if rows else [[]] * width
