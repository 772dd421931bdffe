"""Databases of an earlier release, for the tests of a schema step: an engine opened
with only the first N steps of its engine's migrations, and a user made by SQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from podsync.config import Config
from podsync.services.passwords import PasswordService
from podsync.storage.engine import Engine, create_engine
from podsync.storage.migrations import postgres as pg_migrations
from podsync.storage.migrations import sqlite as sqlite_migrations


@asynccontextmanager
async def database_at(config: Config, engine: str, version: int) -> AsyncIterator[Engine]:
    """The database as a release with schema version `version` left it (open, then
    closed at the end of the block); opening it again afterwards migrates it."""
    module = sqlite_migrations if engine == "sqlite" else pg_migrations
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "MIGRATIONS", module.MIGRATIONS[:version])
        db = create_engine(config.database)
        await db.open()
        try:
            yield db
        finally:
            await db.close()


async def add_user(db: Engine, name: str, password: str | None = None) -> int:
    """A user made by SQL, as any release since the first has the table; with a
    `password`, one that can sign in (else the hash is no hash)."""
    password_hash = "x"
    if password is not None:
        passwords = PasswordService(threads=1)
        try:
            password_hash = await passwords.hash(password)
        finally:
            passwords.close()
    async with db.write() as conn:
        await conn.execute(
            "INSERT INTO users (name, password_hash, created_at) VALUES (?, ?, 0)",
            (name, password_hash),
        )
        row = await conn.fetch_one("SELECT id FROM users WHERE name = ?", (name,))
    return int(row[0])
