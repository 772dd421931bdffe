"""Imports from another server (schema step 18): one row each, so that any process
shows an import's progress and report, asks it to stop, or refuses a second one
while it runs. The process that runs an import writes its heartbeat every few
seconds; a running row whose heartbeat stopped is an import that process dropped.

States: running, then done, stopped (half way: a failure, a bound, a cancel),
failed (nothing read) or refused (the remote refused the password at sign-in)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podsync.store import Connection

RUNNING, DONE, STOPPED, FAILED, REFUSED = "running", "done", "stopped", "failed", "refused"

_COLUMNS = (
    "id, user_id, origin, server, remote_user, state, started_at, heartbeat_at, "
    "finished_at, cancel, since, report"
)


@dataclass(frozen=True, slots=True)
class ImportRow:
    id: int
    user_id: int
    origin: str  # web or cli
    server: str
    remote_user: str
    state: str
    started_at: int
    heartbeat_at: int
    finished_at: int | None
    cancel: bool
    since: str | None
    report: str | None  # JSON


def _row(row: Any) -> ImportRow:
    return ImportRow(
        int(row[0]),
        int(row[1]),
        str(row[2]),
        str(row[3]),
        str(row[4]),
        str(row[5]),
        int(row[6]),
        int(row[7]),
        None if row[8] is None else int(row[8]),
        bool(row[9]),
        None if row[10] is None else str(row[10]),
        None if row[11] is None else str(row[11]),
    )


async def running(conn: Connection, user_id: int) -> ImportRow | None:
    row = await conn.fetch_one(
        f"SELECT {_COLUMNS} FROM remote_imports WHERE user_id = ? AND state = 'running'",
        (user_id,),
    )
    return None if row is None else _row(row)


async def add(
    conn: Connection, user_id: int, origin: str, server: str, remote_user: str, now: int
) -> int:
    row = await conn.fetch_one(
        "INSERT INTO remote_imports "
        "(user_id, origin, server, remote_user, state, started_at, heartbeat_at) "
        "VALUES (?, ?, ?, ?, 'running', ?, ?) RETURNING id",
        (user_id, origin, server, remote_user, now, now),
    )
    return int(row[0])


async def beat(
    conn: Connection, import_id: int, report: str | None, since: str | None, now: int
) -> bool:
    """The running import's heartbeat, with its report so far; whether a stop was
    asked for."""
    await conn.execute(
        "UPDATE remote_imports SET heartbeat_at = ?, report = coalesce(?, report), "
        "since = coalesce(?, since) WHERE id = ? AND state = 'running'",
        (now, report, since, import_id),
    )
    row = await conn.fetch_one("SELECT cancel FROM remote_imports WHERE id = ?", (import_id,))
    return row is not None and bool(row[0])


async def finish(
    conn: Connection,
    import_id: int,
    state: str,
    report: str | None,
    since: str | None,
    now: int,
) -> None:
    await conn.execute(
        "UPDATE remote_imports SET state = ?, report = coalesce(?, report), since = ?, "
        "finished_at = ?, heartbeat_at = ? WHERE id = ?",
        (state, report, since, now, now, import_id),
    )


async def delete(conn: Connection, import_id: int) -> None:
    await conn.execute("DELETE FROM remote_imports WHERE id = ?", (import_id,))


async def ask_to_stop(conn: Connection, user_id: int, import_id: int) -> bool:
    """Flag the user's running import; whether there was one by that id."""
    changed = await conn.execute(
        "UPDATE remote_imports SET cancel = 1 WHERE id = ? AND user_id = ? AND state = 'running'",
        (import_id, user_id),
    )
    return changed > 0


async def get(conn: Connection, user_id: int, import_id: int) -> ImportRow | None:
    row = await conn.fetch_one(
        f"SELECT {_COLUMNS} FROM remote_imports WHERE id = ? AND user_id = ?",
        (import_id, user_id),
    )
    return None if row is None else _row(row)


async def latest_shown(conn: Connection, user_id: int) -> ImportRow | None:
    """The user's newest import that got past its sign-in (a refused password is
    answered on the form, not kept as a report)."""
    row = await conn.fetch_one(
        f"SELECT {_COLUMNS} FROM remote_imports "
        "WHERE user_id = ? AND report IS NOT NULL ORDER BY id DESC LIMIT 1",
        (user_id,),
    )
    return None if row is None else _row(row)


async def latest_from(
    conn: Connection, user_id: int, server: str, remote_user: str
) -> ImportRow | None:
    """The user's newest finished import from this account on this server."""
    row = await conn.fetch_one(
        f"SELECT {_COLUMNS} FROM remote_imports WHERE user_id = ? AND server = ? "
        "AND remote_user = ? AND state != 'running' AND report IS NOT NULL "
        "ORDER BY id DESC LIMIT 1",
        (user_id, server, remote_user),
    )
    return None if row is None else _row(row)


async def nth_newest_refused(conn: Connection, user_id: int, since: int, n: int) -> int | None:
    """When the n-th newest password refused on the web form since `since` was;
    None when there were fewer than n."""
    row = await conn.fetch_one(
        "SELECT finished_at FROM remote_imports WHERE user_id = ? AND state = 'refused' "
        "AND origin = 'web' AND finished_at >= ? ORDER BY finished_at DESC LIMIT 1 OFFSET ?",
        (user_id, since, n - 1),
    )
    return None if row is None else int(row[0])


async def prune(conn: Connection, user_id: int, keep: int, refused_since: int) -> None:
    """Keep the user's `keep` newest imports, the running one, and the refused
    passwords the throttle still counts."""
    await conn.execute(
        "DELETE FROM remote_imports WHERE user_id = ? AND state != 'running' "
        "AND NOT (state = 'refused' AND finished_at >= ?) "
        "AND id NOT IN (SELECT id FROM remote_imports WHERE user_id = ? "
        "ORDER BY id DESC LIMIT ?)",
        (user_id, refused_since, user_id, keep),
    )
