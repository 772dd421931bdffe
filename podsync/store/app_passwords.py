"""App passwords: a user's named random credentials, stored as SHA-256 hashes. The
unique index on the hash finds the row a Basic password names in one lookup."""

from __future__ import annotations

from typing import Any

from podsync import timestamps
from podsync.model import AppPassword, User
from podsync.store import Connection, sync_health
from podsync.store.users import USER_COLUMNS, user_from_row

_COLUMNS = "id, name, created_at, last_used_at"
# Names sort by code point on both engines (PostgreSQL would otherwise use the
# database's locale).
_BINARY = {"sqlite": "", "postgresql": ' COLLATE "C"'}


def _app_password(row: Any) -> AppPassword:
    pid, name, created_at, last_used_at = row
    return AppPassword(
        id=int(pid),
        name=str(name),
        created_at=int(created_at),
        last_used_at=None if last_used_at is None else int(last_used_at),
    )


async def add(
    conn: Connection, user_id: int, name: str, secret_hash: bytes, now: int
) -> AppPassword:
    """Insert one; the caller checked the name is free (inside the same write)."""
    row = await conn.fetch_one(
        "INSERT INTO app_passwords (user_id, name, hash, created_at) VALUES (?, ?, ?, ?) "
        f"RETURNING {_COLUMNS}",
        (user_id, name, secret_hash, now),
    )
    assert row is not None
    return _app_password(row)


async def list_for_user(conn: Connection, user_id: int) -> list[AppPassword]:
    rows = await conn.fetch_all(
        f"SELECT {_COLUMNS} FROM app_passwords WHERE user_id = ? "
        f"ORDER BY name{_BINARY[conn.dialect]}, id",
        (user_id,),
    )
    return [_app_password(row) for row in rows]


async def names_for_user(conn: Connection, user_id: int) -> set[str]:
    rows = await conn.fetch_all("SELECT name FROM app_passwords WHERE user_id = ?", (user_id,))
    return {str(row[0]) for row in rows}


async def count_for_user(conn: Connection, user_id: int) -> int:
    row = await conn.fetch_one("SELECT count(*) FROM app_passwords WHERE user_id = ?", (user_id,))
    return int(row[0]) if row else 0


async def find_by_name(conn: Connection, user_id: int, name: str) -> AppPassword | None:
    row = await conn.fetch_one(
        f"SELECT {_COLUMNS} FROM app_passwords WHERE user_id = ? AND name = ?", (user_id, name)
    )
    return None if row is None else _app_password(row)


async def find_by_id(conn: Connection, user_id: int, password_id: int) -> AppPassword | None:
    row = await conn.fetch_one(
        f"SELECT {_COLUMNS} FROM app_passwords WHERE user_id = ? AND id = ?",
        (user_id, password_id),
    )
    return None if row is None else _app_password(row)


async def exists(conn: Connection, user_id: int, password_id: int) -> bool:
    row = await conn.fetch_one(
        "SELECT 1 FROM app_passwords WHERE id = ? AND user_id = ?", (password_id, user_id)
    )
    return row is not None


async def find_by_hash(
    conn: Connection, secret_hash: bytes
) -> tuple[AppPassword, bytes, User] | None:
    """The app password with this hash, its stored hash and its user, in one statement."""
    columns = ", ".join(f"u.{c.strip()}" for c in USER_COLUMNS.split(","))
    row = await conn.fetch_one(
        "SELECT p.id, p.name, p.created_at, p.last_used_at, p.hash, "
        f"{columns} FROM app_passwords p JOIN users u ON u.id = p.user_id WHERE p.hash = ?",
        (secret_hash,),
    )
    if row is None:
        return None
    return _app_password(row[:4]), bytes(row[4]), user_from_row(row[5:])


async def touch(conn: Connection, password_id: int, now: int, before: int) -> None:
    """Record a use at `now` unless one at or after `before` is already recorded."""
    await conn.execute(
        "UPDATE app_passwords SET last_used_at = ? "
        "WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
        (now, password_id, before),
    )


async def delete(conn: Connection, user_id: int, password_id: int) -> bool:
    """Delete one of the user's (its hash is remembered a while: a device still
    sending it is told it was revoked); whether it was there."""
    await sync_health.remember_revoked(conn, user_id, [password_id], timestamps.now_us())
    return (
        await conn.execute(
            "DELETE FROM app_passwords WHERE id = ? AND user_id = ?", (password_id, user_id)
        )
        > 0
    )


async def delete_for_user(conn: Connection, user_id: int) -> int:
    """Delete all of the user's (remembered as `delete` does); how many there were."""
    await sync_health.remember_revoked(conn, user_id, None, timestamps.now_us())
    return await conn.execute("DELETE FROM app_passwords WHERE user_id = ?", (user_id,))
