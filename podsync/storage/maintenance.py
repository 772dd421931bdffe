"""Database maintenance beside a running server: online backup and integrity check.

Both open their own sqlite3 connections: they are one-shot admin commands that need
the SQLite backup API (`Connection.backup`) and a read-only open.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from podsync.errors import Conflict, NotFound
from podsync.storage.sqlite_connection import BUSY_TIMEOUT_MS

PROBLEMS_SHOWN = 20


@dataclass(frozen=True)
class CheckReport:
    schema_version: int
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def backup(source: str, dest: str, force: bool = False) -> int:
    """Copy the database `source` to `dest` consistently while others write; the
    size in bytes. The copy is written beside `dest` and renamed into place, so a
    failed backup never leaves a half-written `dest`."""
    target = Path(dest)
    if not target.parent.is_dir():
        raise NotFound(f"directory {target.parent} does not exist")
    if target.is_dir():
        raise Conflict(f"{dest} is a directory")
    if target.exists():
        if not force:
            raise Conflict(f"{dest} already exists; add --force to overwrite it")
        if target.resolve() == Path(source).resolve():
            raise Conflict(f"{dest} is the database itself")
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        # The copy holds the password hashes and the token-signing secret: 0600
        # before SQLite writes a byte (SQLite keeps an existing file's mode).
        create_owner_only(partial)
        with (
            contextlib.closing(_connect(source)) as src,
            contextlib.closing(sqlite3.connect(partial)) as out,
        ):
            # pages=-1: one step under one read transaction, so the copy is a
            # single snapshot; in WAL mode writers go on meanwhile.
            src.backup(out, pages=-1)
            # A self-contained file: no -wal beside the copy.
            out.execute("PRAGMA journal_mode = DELETE").fetchone()
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target.stat().st_size


def create_owner_only(path: Path) -> None:
    """Create an empty file readable and writable by its owner only, whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def check(path: str) -> CheckReport:
    """PRAGMA integrity_check and foreign_key_check, and each person's count of
    episode actions against their history (schema step 30 on); never creates the
    file."""
    if not Path(path).is_file():
        raise NotFound(f"database {path} does not exist")
    with contextlib.closing(_connect(path, read_only=True)) as conn:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        problems = [
            str(row[0])
            for row in conn.execute(f"PRAGMA integrity_check({PROBLEMS_SHOWN})")
            if row[0] != "ok"
        ]
        for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check"):
            if len(problems) >= PROBLEMS_SHOWN:
                break
            problems.append(f"{table} row {rowid} refers to a missing {parent} row")
        if version >= COUNTED_FROM and not problems:
            problems += _miscounted(conn)
    return CheckReport(version, problems)


# Schema step 30: users.episode_action_count, kept by the writes of episode actions.
COUNTED_FROM = 30


def _miscounted(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT u.name, u.episode_action_count, coalesce(a.n, 0) FROM users u "
        "LEFT JOIN (SELECT user_id, count(*) AS n FROM episode_actions GROUP BY user_id) a "
        "ON a.user_id = u.id WHERE u.episode_action_count <> coalesce(a.n, 0) "
        "ORDER BY u.id LIMIT ?",
        (PROBLEMS_SHOWN,),
    )
    return [
        f"user {name!r} has {kept} episode actions counted and {held} stored"
        for name, kept, held in rows
    ]


def _connect(path: str, read_only: bool = False) -> sqlite3.Connection:
    uri = Path(path).absolute().as_uri() + ("?mode=ro" if read_only else "?mode=rw")
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn
