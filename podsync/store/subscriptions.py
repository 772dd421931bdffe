"""Subscriptions: the entities the sync rules work on."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

from podsync.feeds import derive_guid
from podsync.model import Subscription, subscription_view
from podsync.storage import loop_share
from podsync.store import Connection, users
from podsync.store.value_lists import each_row, in_list

__all__ = ["Subscription"]

_COLUMNS = (
    "id, user_id, sync_id, guid, feed_url, url_key, title, subscribed_at, unsubscribed_at, "
    "last_updated, last_client_id, change_seq, changed_at, view"
)
# SQLite's default limit of bound parameters is large, but keep IN lists modest.
_CHUNK = 500


def _row(row: Any) -> Subscription:
    return Subscription(*row)


async def _select(conn: Connection, where: str, params: Sequence[Any]) -> list[Subscription]:
    rows = await conn.fetch_all(f"SELECT {_COLUMNS} FROM subscriptions WHERE {where}", params)
    return [_row(r) for r in rows]


async def get_by_sync_id(conn: Connection, user_id: int, sync_id: str) -> Subscription | None:
    rows = await _select(conn, "user_id = ? AND sync_id = ?", (user_id, sync_id))
    return rows[0] if rows else None


async def get_by_id(conn: Connection, user_id: int, entity_id: int) -> Subscription | None:
    rows = await _select(conn, "user_id = ? AND id = ?", (user_id, entity_id))
    return rows[0] if rows else None


async def get_by_url_key(conn: Connection, user_id: int, key: str) -> Subscription | None:
    rows = await _select(conn, "url_key = ? AND user_id = ?", (key, user_id))
    return rows[0] if rows else None


# SQLite's guid index leaves out rows marked `guid_by_url` (schema step 32).
_GUID_INDEXED = " AND guid_by_url IS NULL"


async def find_matching(
    conn: Connection,
    user_id: int,
    sync_ids: Iterable[str],
    url_keys: Iterable[str],
    guids: Iterable[str],
) -> list[Subscription]:
    """The user's entities with any of these sync ids, url keys or guids (each once)."""
    parts: list[tuple[str, tuple[str, list[object]]]] = []
    for column, values in (("sync_id", sync_ids), ("url_key", url_keys), ("guid", guids)):
        unique = sorted(set(values))
        parts += [
            (column, in_list(unique[i : i + _CHUNK], _CHUNK, dialect=conn.dialect))
            for i in range(0, len(unique), _CHUNK)
        ]
    found: dict[int, Subscription] = {}
    # SQLite, without statistics, serves `user_id = ? AND sync_id IN (two or more)`
    # from an index on user_id, reading every row of the user (8 ms at 20,000), not
    # from sync_id's UNIQUE index; `+user_id` is no index's column, so it takes that.
    owner = {
        column: "+user_id" if column == "sync_id" and conn.dialect == "sqlite" else "user_id"
        for column, _ in parts
    }
    sqlite = conn.dialect == "sqlite"
    indexed = {column: _GUID_INDEXED * (column == "guid" and sqlite) for column, _ in parts}
    # A batch's three IN lists go to SQLite as one UNION ALL: one round trip to the
    # writer's thread instead of three, each part still served by its own index.
    for start in range(0, len(parts), 3):
        group = parts[start : start + 3]
        sql = " UNION ALL ".join(
            f"SELECT {_COLUMNS} FROM subscriptions "
            f"WHERE {owner[column]} = ? AND {column} IN ({marks}){indexed[column]}"
            for column, (marks, _) in group
        )
        params = [value for _, (_, bound) in group for value in (user_id, *bound)]
        for row in await conn.fetch_all(sql, params):
            sub = _row(row)
            assert sub.id is not None
            found[sub.id] = sub
    return sorted(found.values(), key=lambda s: s.id or 0)


_INDEX_PIECE = 256  # marked rows a statement of `index_guids` unmarks


async def index_guids(conn: Connection, user_id: int) -> int:
    """Put the user's rows marked `guid_by_url` into SQLite's guid index, a piece at
    a time with loop passes between (`loop_share`); returns how many."""
    if conn.dialect != "sqlite":
        return 0
    done, sql = 0, "UPDATE subscriptions SET guid_by_url = NULL WHERE id IN (SELECT id FROM "
    sql += "subscriptions WHERE user_id = ? AND guid_by_url IS NOT NULL LIMIT ?)"
    with loop_share.sharing():
        while (changed := await conn.execute(sql, (user_id, _INDEX_PIECE))) == _INDEX_PIECE:
            done += changed
            await loop_share.share()
    return done + changed


async def list_all(
    conn: Connection, user_id: int, include_unsubscribed: bool
) -> list[Subscription]:
    """Every entity of the user in creation order (OPML export)."""
    where = "user_id = ?" if include_unsubscribed else "user_id = ? AND unsubscribed_at IS NULL"
    return await _select(conn, where + " ORDER BY id", (user_id,))


async def feeds_after(
    conn: Connection, user_id: int, include_unsubscribed: bool, after: int, limit: int
) -> list[tuple[int, str, str | None]]:
    """(id, feed_url, title) of up to `limit` entities after id `after`, in creation
    order: the OPML export in pages, without building an entity per row. The title is
    the one the user's OPML import kept, else the one the feed fetcher learned."""
    filtered = "" if include_unsubscribed else " AND s.unsubscribed_at IS NULL"
    rows = await conn.fetch_all(
        "SELECT s.id, s.feed_url, coalesce(s.title, f.title) FROM subscriptions AS s "
        "LEFT JOIN feed_info AS f ON f.url_key = s.url_key "
        f"WHERE s.user_id = ? AND s.id > ?{filtered} ORDER BY s.id LIMIT ?",
        (user_id, after, limit),
    )
    return [(int(i), str(u), None if t is None else str(t)) for i, u, t in rows]


# The columns a batch writes; an entity is addressed by (user_id, sync_id).
_STATE = (
    "guid",
    "feed_url",
    "url_key",
    "title",
    "subscribed_at",
    "unsubscribed_at",
    "last_updated",
    "last_client_id",
    "change_seq",
    "changed_at",
    "view",
)
_state = operator.attrgetter(*_STATE)
# SQLite's: `guid_by_url` 1 when the guid is derived from the feed URL (step 32).
_INSERT = (
    f"INSERT INTO subscriptions (user_id, sync_id, {', '.join(_STATE)}, guid_by_url) "
    f"VALUES (?, ?, {', '.join('?' * len(_STATE))}, ?)"
)


def _by_url(entity: Subscription) -> int | None:
    return 1 if entity.guid == derive_guid(entity.feed_url) else None


# A new feed URL (or url key) unmarks the row.
_UPDATE = (
    f"UPDATE subscriptions SET {', '.join(f'{c} = ?' for c in _STATE)}, guid_by_url = NULL "
    "WHERE user_id = ? AND sync_id = ?"
)
# The same without feed_url and url_key, for entities that kept both (nearly all:
# a subscribe or unsubscribe). Setting feed_url brings in the trigger that keeps old
# URLs, and a statement with a trigger needs a statement journal: inside the write
# block's SAVEPOINT that journal is never truncated, so each statement cost more
# than the last (a 20,000-feed replace took minutes).
_KEPT = tuple(c for c in _STATE if c not in ("feed_url", "url_key"))
_kept = operator.attrgetter(*_KEPT)
# A row keeps its mark while its guid stays (SET reads the row before the UPDATE;
# the last parameter is the new guid again).
_UPDATE_KEPT = (
    f"UPDATE subscriptions SET {', '.join(f'{c} = ?' for c in _KEPT)}, "
    "guid_by_url = CASE WHEN guid = ? THEN guid_by_url END "
    "WHERE user_id = ? AND sync_id = ?"
)


# PostgreSQL: a batch's rows as one array per column, one statement (and one executor
# run) instead of one per row. WITH ORDINALITY ... ORDER BY keeps the rows in the
# batch's order, so that ids follow the order of creation as on SQLite.
_TYPES = {
    "sync_id": "text",
    "guid": "text",
    "feed_url": "text",
    "url_key": "text",
    "title": "text",
    "subscribed_at": "bigint",
    "unsubscribed_at": "bigint",
    "last_updated": "bigint",
    "last_client_id": "text",
    "change_seq": "bigint",
    "changed_at": "bigint",
    "view": "bytea",
}


def _arrays(columns: Sequence[str]) -> str:
    """`unnest(?::t1[], ...) WITH ORDINALITY AS batch(c1, ..., n)` over `columns`."""
    casts = ", ".join(f"?::{_TYPES[c]}[]" for c in columns)
    return f"unnest({casts}) WITH ORDINALITY AS batch({', '.join(columns)}, n)"


_INSERT_ARRAYS = (
    f"INSERT INTO subscriptions (user_id, sync_id, {', '.join(_STATE)}) "
    f"SELECT ?::bigint, sync_id, {', '.join(_STATE)} FROM {_arrays(('sync_id', *_STATE))} "
    "ORDER BY n"
)


def _columns(rows: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Rows to one list per column (PostgreSQL's arrays)."""
    return [list(column) for column in zip(*rows, strict=True)]


async def save(
    conn: Connection,
    created: Sequence[Subscription],
    changed: Sequence[Subscription],
    moved_keys: Sequence[Subscription],
    now: int,
) -> dict[str, Subscription]:
    """Write a batch's outcome (one user's): each entity gets the user's next change
    number (created ones first, each list in its own order), `changed_at = now` and
    its stored view; returns the saved entities by sync_id.

    `moved_keys` are changed entities whose url key or feed URL changed: their keys
    are parked on a unique placeholder first, so that keys swapped between entities
    within one batch never trip the (user_id, url_key) unique index. Only they have
    their feed_url and url_key written."""
    entities = [*created, *changed]
    if not entities:
        return {}
    user_id = entities[0].user_id
    assert all(e.user_id == user_id for e in entities), "a batch is one user's"
    first_seq = await users.next_change_seqs(conn, user_id, len(entities), len(created))
    saved: dict[str, Subscription] = {}
    for offset, entity in enumerate(entities):
        # The plan's own copies (new, or made by its replace): filled in place.
        entity.change_seq = first_seq + offset
        entity.changed_at = now
        entity.view = subscription_view(entity)
        saved[entity.sync_id] = entity
    if moved_keys:
        await conn.execute_many(
            "UPDATE subscriptions SET url_key = '#' || sync_id WHERE user_id = ? AND sync_id = ?",
            [(s.user_id, s.sync_id) for s in moved_keys],
        )
    if changed:
        moved = {s.sync_id for s in moved_keys}
        kept = [s for s in changed if s.sync_id not in moved]
        if kept:
            await conn.execute_many(
                _UPDATE_KEPT,
                [(*_kept(saved[s.sync_id]), s.guid, s.user_id, s.sync_id) for s in kept],
            )
        if moved:
            await conn.execute_many(
                _UPDATE,
                [(*_state(saved[s.sync_id]), s.user_id, s.sync_id) for s in moved_keys],
            )
    if created and conn.dialect == "postgresql":
        rows = [(s.sync_id, *_state(saved[s.sync_id])) for s in created]
        await conn.execute(_INSERT_ARRAYS, (user_id, *_columns(rows)))
    elif created:
        await conn.execute_many(
            _INSERT,
            [(s.user_id, s.sync_id, *_state(saved[s.sync_id]), _by_url(s)) for s in created],
        )
    return saved


async def count_entities(conn: Connection, user_id: int) -> int:
    """How many entities (subscribed or not) the user holds."""
    row = await conn.fetch_one("SELECT entity_count FROM users WHERE id = ?", (user_id,))
    return 0 if row is None else int(row[0])


async def count_subscribed(conn: Connection, user_id: int) -> int:
    """How many feeds the user has subscribed: a count over the index that holds
    unsubscribed_at (left to itself, SQLite took another index on user_id and read
    every row of the user: 4 ms at 20,000 feeds instead of 0.9)."""
    table, condition = _keyset(conn, include_unsubscribed=False)
    row = await conn.fetch_one(
        f"SELECT count(*) FROM {table} WHERE user_id = ?{condition}", (user_id,)
    )
    return 0 if row is None else int(row[0])


async def user_seq(conn: Connection, user_id: int) -> int:
    """The highest change_seq among the user's entities (0 when none)."""
    row = await conn.fetch_one(
        "SELECT max(change_seq) FROM subscriptions WHERE user_id = ?", (user_id,)
    )
    return 0 if row is None or row[0] is None else int(row[0])


def _keyset(conn: Connection, include_unsubscribed: bool) -> tuple[str, str]:
    """The indexed table and filter of a keyset query. The index on (user_id, id,
    unsubscribed_at) answers the filter itself, so a page of subscribed entities
    reads only the table rows it returns; INDEXED BY keeps SQLite's planner from
    choosing another index on user_id without statistics (PostgreSQL has
    statistics and no INDEXED BY)."""
    condition = "" if include_unsubscribed else " AND unsubscribed_at IS NULL"
    if conn.dialect != "sqlite":
        return "subscriptions", condition
    return "subscriptions INDEXED BY subscriptions_user", condition


async def page_and_edge(
    conn: Connection,
    user_id: int,
    position: int,
    forward: bool,
    include_unsubscribed: bool,
    limit: int,
) -> tuple[list[tuple[int, bytes]], bool | None]:
    """(id, view) of up to `limit` entities beyond `position` (id > position in creation order, or
    id < position nearest first) and, from the same statement so that the two agree,
    whether a matching entity lies on the other side (id <= position, or id >=
    position). One round trip instead of a read transaction of four. The flag rides
    on every row, so it is None for an empty page."""
    table, condition = _keyset(conn, include_unsubscribed)
    beyond, order, edge = (
        ("id > ?", "id", "id <= ?") if forward else ("id < ?", "id DESC", "id >= ?")
    )
    sql = (
        f"SELECT id, view, (SELECT EXISTS (SELECT 1 FROM {table} "
        f"WHERE user_id = ? AND {edge}{condition})) "
        f"FROM {table} WHERE user_id = ? AND {beyond}{condition} ORDER BY {order} LIMIT ?"
    )
    rows = await conn.fetch_all(sql, (user_id, position, user_id, position, limit))
    if not rows:
        return [], None
    return [(r[0], r[1]) for r in rows], bool(rows[0][2])


async def exists_beyond(
    conn: Connection, user_id: int, pivot: int, after: bool, include_unsubscribed: bool
) -> bool:
    """Whether a matching entity lies after (or before) the id `pivot`."""
    op = ">" if after else "<"
    table, condition = _keyset(conn, include_unsubscribed)
    sql = f"SELECT EXISTS (SELECT 1 FROM {table} WHERE user_id = ? AND id {op} ?{condition})"
    row = await conn.fetch_one(sql, (user_id, pivot))
    return bool(row and row[0])


async def changes_and_counter(
    conn: Connection, user_id: int, after_seq: int, exclude_client: str | None, limit: int
) -> tuple[list[tuple[int, int, bytes]], int]:
    """(change_seq, last_updated, view) of the entities changed after `after_seq`, in
    change order, optionally leaving out those whose last writer is `exclude_client`;
    and the user's change counter, read by the same statement so that the two
    agree. (A poll at the head of the feed finds no rows: the counter comes on the
    one row the LEFT JOIN keeps; a user deleted meanwhile has neither.)"""
    distinct = "IS NOT" if conn.dialect == "sqlite" else "IS DISTINCT FROM"
    mine = "" if exclude_client is None else f" AND last_client_id {distinct} ?"
    params: list[Any] = [user_id, after_seq] + ([] if exclude_client is None else [exclude_client])
    sql = (
        f"SELECT counter.change_seq, page.* FROM users AS counter "
        f"LEFT JOIN (SELECT change_seq, last_updated, view FROM subscriptions "
        f"WHERE user_id = ? AND change_seq > ?{mine} ORDER BY change_seq LIMIT ?) AS page ON TRUE "
        f"WHERE counter.id = ? ORDER BY page.change_seq"
    )
    rows = await conn.fetch_all(sql, [*params, limit, user_id])
    if not rows:
        return [], after_seq
    counter = int(rows[0][0])
    return [(r[1], r[2], r[3]) for r in rows if r[1] is not None], counter


async def first_change_since(conn: Connection, user_id: int, since: int) -> int | None:
    """The smallest change_seq among the user's entities changed at or after `since`."""
    row = await conn.fetch_one(
        "SELECT min(change_seq) FROM subscriptions WHERE user_id = ? AND changed_at >= ?",
        (user_id, since),
    )
    return None if row is None or row[0] is None else int(row[0])


def with_feed_items(dialect: str, columns: str, condition: str) -> str:
    """The FROM of a read of the person's podcasts `s` with their feeds' items `fe`
    that meet `condition` (its parameters bound before the caller's WHERE). SQLite is
    held to that order (CROSS JOIN), each feed's items by the url key's index.
    PostgreSQL looks each podcast's items up on its own (`each_row`; `columns`: the
    items' columns the read names): a connection's generic plan, on a server's
    gathered statistics, read every feed's items on the server and joined them
    (20,040 for a feed of 40)."""
    if dialect == "postgresql":
        items = f"SELECT {columns} FROM feed_episodes fe WHERE fe.url_key = s.url_key"
        items += f" AND {condition}"
        return f"subscriptions s {each_row(items, 'fe')}"
    return f"subscriptions s CROSS JOIN feed_episodes fe ON fe.url_key = s.url_key AND {condition}"
