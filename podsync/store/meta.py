"""Small server-wide values kept in the `meta` table."""

from __future__ import annotations

from podsync.errors import Unauthorized
from podsync.store import Connection

ACCOUNT_GONE = "this account was deleted"


class UngatedWrite(RuntimeError):
    """A write took a user's lock without naming the user when it opened
    (`Engine.write(user=)`): on PostgreSQL it would wait for the lock holding a
    pooled connection, and a burst of one account's writes would hold them all.
    A mistake in podsync's code, not in a request."""


async def get(conn: Connection, key: str) -> str | None:
    row = await conn.fetch_one("SELECT value FROM meta WHERE key = ?", (key,))
    return None if row is None else str(row[0])


async def put_if_absent(conn: Connection, key: str, value: str) -> str:
    """Store `value` unless the key exists; return the value that is stored."""
    await conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
    )
    stored = await get(conn, key)
    assert stored is not None
    return stored


# The plan settings of `keyed_plans` for the rest of the transaction, made by the
# lock's own statement (four SET LOCAL were four more statements a batch).
_KEYED_PLANS = "".join(
    f", set_config('{name}', '{value}', true)"
    for name, value in (
        ("plan_cache_mode", "force_generic_plan"),
        ("enable_seqscan", "off"),
        ("enable_bitmapscan", "off"),
        ("jit", "off"),
    )
)


async def lock_user(
    conn: Connection, user_id: int, *, keyed_plans: bool = False, row_taken_next: bool = False
) -> None:
    """Serialise the user's writers, across processes, to the end of the transaction,
    and make sure the user still exists: Unauthorized when it was deleted since the
    request authenticated. Call first in every write that adds rows of the user,
    opened as `write(user=user_id)` (on PostgreSQL, UngatedWrite otherwise).

    SQLite has one writer, so the write transaction already holds everything still:
    the user read here stays until COMMIT. On PostgreSQL two processes could
    otherwise both find an action id unrecorded or a url key free and both act on it;
    with a transaction-scoped advisory lock the second one waits, then reads (READ
    COMMITTED: every statement sees what committed before it) what the first wrote.
    FOR KEY SHARE keeps the user's row until COMMIT: a `user delete` running meanwhile
    waits for this write and then deletes its rows too, never the other way round.

    On PostgreSQL both statements go as one simple query (the id written in the
    text: an integer), which also carries the block's BEGIN when they come first
    (`PgConnection`): one round trip where there were three. The lock has to be a
    statement of its own, before the block's reads: a statement reads what had
    committed when it started, so a read in the statement that waits for the lock
    would miss what the batch it waited for wrote.

    With `keyed_plans` (for a transaction whose later statements look rows up by
    their keys, as the sync batch's), PostgreSQL plans each of them once per
    connection (a generic plan, made again after an ANALYZE of its tables) and never
    with a sequential scan or a bitmap scan. Left to choose, it planned each call for
    its values, which costs the planning every time and trusts the statistics about
    this one user: a user who is new, or grew since the last ANALYZE, looks like a few
    rows, and that plan read all of the user's rows through an index on user_id to
    find 30 keys (2,242 buffers a batch at 12,000 subscriptions, against 288). And a plan
    made while a table was empty (a new instance, before autovacuum's first ANALYZE)
    scanned the whole table once per key, and stayed until that ANALYZE: 6,800
    buffers a batch after 600 batches, against 300. A bitmap scan is what the planner
    took for each key of the batch's read (`sync_batch._matching`) on any statistics:
    it expects a third of a third of the rows from a row comparison, where a key
    finds one, and the bitmap's set-up cost about a fifth more CPU than the read's
    plain index scans. That estimate also puts the read's cost past `jit_above_cost`
    once the user holds a few thousand subscriptions, and compiling it (on a server
    built with JIT) took 8-19 ms of every batch's 0.2 ms read: no JIT either.

    The episode write takes `keyed_plans` too: on a new instance's statistics its
    lookups, left to choose, read the user's every action once per upload.

    With `row_taken_next`, PostgreSQL's lock is one statement, the advisory lock and
    the settings, and the user's row is left to the caller's next statement, which
    must take it FOR KEY SHARE and raise Unauthorized when it is gone: the sync
    batch's read does (`sync_batch.load`), a prepared statement. Taken here, as a
    simple query, the row's SELECT was parsed and planned again on every batch."""
    if conn.dialect == "postgresql":
        uid = int(user_id)
        if conn.gated_user != uid:
            raise UngatedWrite(
                f"a write that takes user {uid}'s lock opens as write(user={uid}), "
                f"not write(user={conn.gated_user})"
            )
        settings = _KEYED_PLANS if keyed_plans else ""
        if row_taken_next:
            await conn.execute(f"SELECT pg_advisory_xact_lock({uid}){settings}")
            return
        found = await conn.execute(
            f"SELECT pg_advisory_xact_lock({uid}){settings}; "
            f"SELECT 1 FROM users WHERE id = {uid} FOR KEY SHARE"
        )
    else:
        row = await conn.fetch_one("SELECT 1 FROM users WHERE id = ?", (user_id,))
        found = int(row is not None)
    if not found:
        raise Unauthorized(ACCOUNT_GONE)


async def keyed_plans(conn: Connection) -> None:
    """`lock_user`'s keyed plan settings for the rest of a read's transaction (a
    `snapshot()`) on PostgreSQL; nothing on SQLite. For reads that page through the
    user's actions newest first: on a new instance's statistics PostgreSQL, left to
    choose, sorted the user's every action for a page of 51."""
    if conn.dialect == "postgresql":
        await conn.execute(f"SELECT 1{_KEYED_PLANS}")


async def ping(conn: Connection) -> None:
    """One trivial query: the database answers."""
    await conn.fetch_one("SELECT 1")


async def schema_version(conn: Connection) -> int:
    """How many migrations this database has run."""
    if conn.dialect == "postgresql":
        row = await conn.fetch_one("SELECT coalesce(max(version), 0) FROM schema_version")
    else:
        row = await conn.fetch_one("PRAGMA user_version")
    return int(row[0]) if row else 0


async def touch(conn: Connection) -> None:
    """Rewrite one row unchanged: a write SQLite refuses on a read-only database.
    Call inside a write. PostgreSQL refuses an UPDATE in a read-only transaction or on
    a standby whatever it matches; there the row does not exist (no row lock taken)."""
    await conn.execute("UPDATE meta SET value = value WHERE key = 'health_probe'")
