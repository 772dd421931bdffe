"""Browser sessions of the web UI: one row per signed-in browser, keyed by the
SHA-256 of the cookie's random token (the token itself is never stored)."""

from __future__ import annotations

from dataclasses import dataclass

from podsync.model import User
from podsync.store import Connection
from podsync.store.users import USER_COLUMNS, user_from_row


@dataclass(frozen=True, slots=True)
class WebSession:
    token_hash: bytes
    user_id: int
    csrf_token: str
    created_at: int
    expires_at: int


async def add(
    conn: Connection,
    token_hash: bytes,
    user_id: int,
    csrf_token: str,
    now: int,
    expires_at: int,
) -> None:
    await conn.execute(
        "INSERT INTO web_sessions (token_hash, user_id, csrf_token, created_at, expires_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (token_hash, user_id, csrf_token, now, expires_at),
    )


async def find(conn: Connection, token_hash: bytes, now: int) -> tuple[WebSession, User] | None:
    """The unexpired session with this token hash and its user, in one statement."""
    columns = ", ".join(f"u.{c.strip()}" for c in USER_COLUMNS.split(","))
    row = await conn.fetch_one(
        "SELECT s.user_id, s.csrf_token, s.created_at, s.expires_at, "
        f"{columns} FROM web_sessions s JOIN users u ON u.id = s.user_id "
        "WHERE s.token_hash = ? AND s.expires_at > ?",
        (token_hash, now),
    )
    if row is None:
        return None
    session = WebSession(token_hash, int(row[0]), str(row[1]), int(row[2]), int(row[3]))
    return session, user_from_row(row[4:])


async def delete(conn: Connection, token_hash: bytes) -> None:
    await conn.execute("DELETE FROM web_sessions WHERE token_hash = ?", (token_hash,))


async def delete_for_user(conn: Connection, user_id: int) -> None:
    await conn.execute("DELETE FROM web_sessions WHERE user_id = ?", (user_id,))


async def delete_expired(conn: Connection, now: int) -> int:
    return await conn.execute("DELETE FROM web_sessions WHERE expires_at <= ?", (now,))


async def count_for_user(conn: Connection, user_id: int, now: int) -> int:
    row = await conn.fetch_one(
        "SELECT count(*) FROM web_sessions WHERE user_id = ? AND expires_at > ?", (user_id, now)
    )
    return int(row[0])


async def set_import_report(conn: Connection, token_hash: bytes, report: str | None) -> None:
    """Keep (or drop) the report of the session's last OPML import (JSON)."""
    await conn.execute(
        "UPDATE web_sessions SET import_report = ? WHERE token_hash = ?", (report, token_hash)
    )


async def import_report(conn: Connection, token_hash: bytes) -> str | None:
    row = await conn.fetch_one(
        "SELECT import_report FROM web_sessions WHERE token_hash = ?", (token_hash,)
    )
    return None if row is None or row[0] is None else str(row[0])
