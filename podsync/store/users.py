"""Users: accounts, password hashes, the token generation that revokes tokens."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import aiosqlite

from podsync.errors import Conflict, NotFound
from podsync.store import fetch_one


@dataclass(frozen=True)
class User:
    id: int
    name: str
    password_hash: str
    enabled: bool
    token_generation: int
    created_at: int


@dataclass(frozen=True)
class UserSummary:
    name: str
    enabled: bool
    subscriptions: int
    created_at: int
    devices: int = 0  # gpodder devices


_COLUMNS = "id, name, password_hash, enabled, token_generation, created_at"


def _user(row: Any) -> User:
    uid, name, password_hash, enabled, generation, created_at = row
    return User(
        id=int(uid),
        name=str(name),
        password_hash=str(password_hash),
        enabled=bool(enabled),
        token_generation=int(generation),
        created_at=int(created_at),
    )


async def get_by_name(conn: aiosqlite.Connection, name: str) -> User | None:
    row = await fetch_one(conn, f"SELECT {_COLUMNS} FROM users WHERE name = ?", (name,))
    return None if row is None else _user(row)


async def get_by_id(conn: aiosqlite.Connection, user_id: int) -> User | None:
    row = await fetch_one(conn, f"SELECT {_COLUMNS} FROM users WHERE id = ?", (user_id,))
    return None if row is None else _user(row)


async def require_by_name(conn: aiosqlite.Connection, name: str) -> User:
    user = await get_by_name(conn, name)
    if user is None:
        raise NotFound(f"no user named {name!r}")
    return user


async def create(conn: aiosqlite.Connection, name: str, password_hash: str, now: int) -> User:
    try:
        async with conn.execute(
            f"INSERT INTO users (name, password_hash, created_at) VALUES (?, ?, ?) "
            f"RETURNING {_COLUMNS}",
            (name, password_hash, now),
        ) as cur:
            row = await cur.fetchone()
    except sqlite3.IntegrityError:
        raise Conflict(f"a user named {name!r} already exists") from None
    assert row is not None
    return _user(row)


async def set_password_hash(conn: aiosqlite.Connection, user_id: int, password_hash: str) -> None:
    await conn.execute("UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id))


async def set_enabled(conn: aiosqlite.Connection, user_id: int, enabled: bool) -> None:
    await conn.execute("UPDATE users SET enabled = ? WHERE id = ?", (int(enabled), user_id))


async def bump_generation(conn: aiosqlite.Connection, user_id: int) -> None:
    """Invalidate every access token issued so far (they carry the old generation)."""
    await conn.execute(
        "UPDATE users SET token_generation = token_generation + 1 WHERE id = ?", (user_id,)
    )


async def delete(conn: aiosqlite.Connection, user_id: int) -> None:
    """Delete the user; foreign keys cascade to tokens, subscriptions, actions, gpodder
    devices and episode actions."""
    await conn.execute("DELETE FROM users WHERE id = ?", (user_id,))


async def list_summaries(conn: aiosqlite.Connection) -> list[UserSummary]:
    async with conn.execute(
        "SELECT u.name, u.enabled, "
        "  (SELECT count(*) FROM subscriptions s "
        "   WHERE s.user_id = u.id AND s.unsubscribed_at IS NULL), "
        "  u.created_at, "
        "  (SELECT count(*) FROM gpodder_devices d WHERE d.user_id = u.id) "
        "FROM users u ORDER BY u.name"
    ) as cur:
        rows = await cur.fetchall()
    return [
        UserSummary(
            name=str(n), enabled=bool(e), subscriptions=int(c), created_at=int(t), devices=int(d)
        )
        for n, e, c, t, d in rows
    ]
