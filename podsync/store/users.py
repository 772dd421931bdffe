"""Users: accounts, password hashes, the token generation that revokes tokens."""

from __future__ import annotations

from typing import Any

from podsync.errors import Conflict, NotFound, Unauthorized
from podsync.model import User, UserOverview, UserSummary
from podsync.store import Connection, integrity_errors
from podsync.store.meta import ACCOUNT_GONE

__all__ = ["User", "UserSummary"]

# Names sort by code point on both engines (PostgreSQL would otherwise use the
# database's locale).
_BINARY = {"sqlite": "", "postgresql": ' COLLATE "C"'}
USER_COLUMNS = "id, name, password_hash, enabled, token_generation, created_at, admin, time_zone"
_COLUMNS = USER_COLUMNS


def user_from_row(row: Any) -> User:
    """A User from the USER_COLUMNS of a row, in that order."""
    uid, name, password_hash, enabled, generation, created_at, admin, time_zone = row
    return User(
        id=int(uid),
        name=str(name),
        password_hash=str(password_hash),
        enabled=bool(enabled),
        token_generation=int(generation),
        created_at=int(created_at),
        admin=bool(admin),
        time_zone=None if time_zone is None else str(time_zone),
    )


_user = user_from_row


async def get_by_name(conn: Connection, name: str) -> User | None:
    row = await conn.fetch_one(f"SELECT {_COLUMNS} FROM users WHERE name = ?", (name,))
    return None if row is None else _user(row)


async def get_by_id(conn: Connection, user_id: int) -> User | None:
    row = await conn.fetch_one(f"SELECT {_COLUMNS} FROM users WHERE id = ?", (user_id,))
    return None if row is None else _user(row)


async def require_by_name(conn: Connection, name: str) -> User:
    user = await get_by_name(conn, name)
    if user is None:
        raise NotFound(f"no user named {name!r}")
    return user


async def create(
    conn: Connection, name: str, password_hash: str, now: int, admin: bool = False
) -> User:
    """Create a user; Conflict when the name exists in any letter case. Call inside a
    write: the check and the insert are one transaction, so two cannot both pass."""
    if conn.dialect == "postgresql":
        # Writers run concurrently here: a lock on the folded name makes the check and
        # the insert of two processes one after the other (held to COMMIT).
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(lower(?)))", (name,))
        sql = "SELECT name FROM users WHERE lower(name) = lower(?) LIMIT 1"
    else:
        sql = "SELECT name FROM users WHERE name = ? COLLATE NOCASE LIMIT 1"
    taken = await conn.fetch_one(sql, (name,))
    if taken is not None:
        existing = str(taken[0])
        hint = "" if existing == name else " (names are unique ignoring case)"
        raise Conflict(f"a user named {existing!r} already exists{hint}")
    try:
        row = await conn.fetch_one(
            f"INSERT INTO users (name, password_hash, created_at, admin) VALUES (?, ?, ?, ?) "
            f"RETURNING {_COLUMNS}",
            (name, password_hash, now, int(admin)),
        )
    except integrity_errors():
        raise Conflict(f"a user named {name!r} already exists") from None
    assert row is not None
    return _user(row)


async def set_password_hash(conn: Connection, user_id: int, password_hash: str) -> None:
    await conn.execute("UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id))


async def set_enabled(conn: Connection, user_id: int, enabled: bool) -> None:
    await conn.execute("UPDATE users SET enabled = ? WHERE id = ?", (int(enabled), user_id))


async def set_admin(conn: Connection, user_id: int, admin: bool) -> None:
    await conn.execute("UPDATE users SET admin = ? WHERE id = ?", (int(admin), user_id))


async def set_time_zone(conn: Connection, user_id: int, time_zone: str | None) -> None:
    """The web UI's zone for the user (None: the server's ui.time_zone)."""
    await conn.execute("UPDATE users SET time_zone = ? WHERE id = ?", (time_zone, user_id))


async def bump_generation(conn: Connection, user_id: int) -> None:
    """Invalidate every access token issued so far (they carry the old generation)."""
    await conn.execute(
        "UPDATE users SET token_generation = token_generation + 1 WHERE id = ?", (user_id,)
    )


async def delete(conn: Connection, user_id: int) -> None:
    """Delete the user; foreign keys cascade to tokens, subscriptions, actions, gpodder
    devices and episode actions."""
    await conn.execute("DELETE FROM users WHERE id = ?", (user_id,))


async def list_summaries(conn: Connection) -> list[UserSummary]:
    rows = await conn.fetch_all(
        "SELECT u.name, u.enabled, "
        "  (SELECT count(*) FROM subscriptions s "
        "   WHERE s.user_id = u.id AND s.unsubscribed_at IS NULL), "
        "  u.created_at, "
        "  (SELECT count(*) FROM gpodder_devices d WHERE d.user_id = u.id), "
        "  u.admin "
        f"FROM users u ORDER BY u.name{_BINARY[conn.dialect]}"
    )
    return [
        UserSummary(
            name=str(n),
            enabled=bool(e),
            subscriptions=int(c),
            created_at=int(t),
            devices=int(d),
            admin=bool(a),
        )
        for n, e, c, t, d, a in rows
    ]


async def overview(conn: Connection, name: str | None = None) -> list[UserOverview]:
    """Every user with counts and the last activity: the admin's Users page; or only
    the user of that name (none when there is none): the admin's page of a user."""
    where, params = ("WHERE u.name = ? ", (name,)) if name is not None else ("", ())
    rows = await conn.fetch_all(
        "SELECT u.name, u.enabled, u.admin, "
        "  (SELECT count(*) FROM subscriptions s "
        "   WHERE s.user_id = u.id AND s.unsubscribed_at IS NULL), "
        "  (SELECT count(*) FROM gpodder_devices d WHERE d.user_id = u.id), "
        "  u.created_at, "
        "  (SELECT max(d.last_seen_at) FROM gpodder_devices d WHERE d.user_id = u.id), "
        "  (SELECT max(w.created_at) FROM web_sessions w WHERE w.user_id = u.id), "
        "  (SELECT max(s.changed_at) FROM subscriptions s WHERE s.user_id = u.id) "
        f"FROM users u {where}ORDER BY u.name{_BINARY[conn.dialect]}",
        params,
    )
    return [
        UserOverview(
            name=str(n),
            enabled=bool(e),
            admin=bool(a),
            subscriptions=int(c),
            devices=int(d),
            created_at=int(t),
            last_activity=max(
                (int(x) for x in (seen, signed, changed) if x is not None), default=None
            ),
        )
        for n, e, a, c, d, t, seen, signed, changed in rows
    ]


async def next_change_seqs(
    conn: Connection, user_id: int, count: int, new_entities: int = 0
) -> int:
    """Reserve the user's next `count` change numbers; return the first. Call inside a
    write, after `meta.lock_user`: the user's writers then take numbers one at a time
    and commit in that order (on PostgreSQL the UPDATE also holds the user's row to
    COMMIT), so a change feed never sees number 11 while 10 is still to come. Other
    users' writers take their own numbers and never wait for this one.
    `new_entities` is added to the user's count of entities by the same statement."""
    row = await conn.fetch_one(
        "UPDATE users SET change_seq = change_seq + ?, entity_count = entity_count + ? "
        "WHERE id = ? RETURNING change_seq",
        (count, new_entities, user_id),
    )
    if row is None:
        raise Unauthorized(ACCOUNT_GONE)
    return int(row[0]) - count + 1


async def change_seq(conn: Connection, user_id: int) -> int:
    """The user's last change number (0 before the first, or for a user gone)."""
    row = await conn.fetch_one("SELECT change_seq FROM users WHERE id = ?", (user_id,))
    return 0 if row is None else int(row[0])
