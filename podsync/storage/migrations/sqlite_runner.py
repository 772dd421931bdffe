"""The runner of SQLite's schema steps (`PRAGMA user_version` counts those run)."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Sequence

from podsync.storage.migrations import check_version, log_upgrade

log = logging.getLogger("podsync.db")

# A step is an SQL script, or a function for what SQL cannot compute (it runs inside
# the step's transaction).
Step = str | Callable[[sqlite3.Connection], None]


def run(raw: sqlite3.Connection, steps: Sequence[Step]) -> int:
    """Run the steps this database lacks, each in its own transaction with its
    version; return the resulting version."""
    current = int(raw.execute("PRAGMA user_version").fetchone()[0])
    check_version(current, len(steps))
    # Foreign keys off while a step runs (a step that copies a table drops the old
    # one, which must not cascade to the rows that refer to it), checked before its
    # COMMIT. The pragma cannot change inside a transaction.
    enforced = bool(raw.execute("PRAGMA foreign_keys").fetchone()[0])
    raw.execute("PRAGMA foreign_keys = OFF")
    began = time.monotonic()
    ran = False
    try:
        for version in range(current + 1, len(steps) + 1):
            ran = _run_step(raw, version, steps[version - 1]) or ran
    finally:
        raw.execute(f"PRAGMA foreign_keys = {'ON' if enforced else 'OFF'}")
    if current < len(steps):
        _compact(raw)
    if ran:
        log_upgrade(log, current, len(steps), time.monotonic() - began)
    return len(steps)


def _compact(raw: sqlite3.Connection) -> None:
    """VACUUM once the steps have left more than a quarter of the file free (a table
    they copied): SQLite keeps freed pages for reuse and never gives them back
    otherwise. When another process holds the database, the file stays as it is."""
    pages = int(raw.execute("PRAGMA page_count").fetchone()[0])
    free = int(raw.execute("PRAGMA freelist_count").fetchone()[0])
    if free * 4 <= pages:
        return
    size = int(raw.execute("PRAGMA page_size").fetchone()[0])
    log.info("compacting the database: %.1f of %.1f MB free", free * size / 1e6, pages * size / 1e6)
    try:
        raw.execute("VACUUM")
    except sqlite3.OperationalError as exc:
        log.warning(
            "the database was not compacted (%s): %.1f MB stay free inside it until a "
            "VACUUM while podsync is stopped (sqlite3 FILE VACUUM)",
            exc,
            free * size / 1e6,
        )


def _run_step(raw: sqlite3.Connection, version: int, step: Step) -> bool:
    """Run one step; False when another process ran it meanwhile."""
    raw.execute("BEGIN IMMEDIATE")
    try:
        # Re-check under the write lock: another process may have migrated.
        if int(raw.execute("PRAGMA user_version").fetchone()[0]) >= version:
            raw.execute("ROLLBACK")
            return False
        if isinstance(step, str):
            for statement in statements(step):
                raw.execute(statement)
        else:
            step(raw)
        broken = raw.execute("PRAGMA foreign_key_check").fetchone()
        if broken is not None:
            raise sqlite3.IntegrityError(f"schema step {version} broke a foreign key: {broken}")
        raw.execute(f"PRAGMA user_version = {version}")
        raw.execute("COMMIT")
        return True
    except BaseException:
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        raise


def statements(script: str) -> list[str]:
    """Split a migration script into complete statements (sqlite3.complete_statement)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
