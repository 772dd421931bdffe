"""Databases of an earlier release, for the tests of a schema step: an engine opened
with only the first N steps of its engine's migrations, a user made by SQL, episode
actions stored by the current store on a schema from step 19 to 29, and subscriptions
and episode actions written as the releases before step 19 wrote them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from podsync.config import Config
from podsync.feeds import derive_guid, new_uuid7, url_key
from podsync.model import Subscription, subscription_view
from podsync.storage.engine import Engine, create_engine
from podsync.storage.migrations import postgres as pg_migrations
from podsync.storage.migrations import sqlite as sqlite_migrations
from podsync.storage.migrations import sqlite_steps_0_4
from podsync.storage.migrations.episode_views import episode_action_view
from podsync.store import episodes, subscriptions
from podsync.store.episodes import EpisodeAction
from tests.conftest import cheap_passwords


@asynccontextmanager
async def database_at(config: Config, engine: str, version: int) -> AsyncIterator[Engine]:
    """The database as a release with schema version `version` left it (open, then
    closed at the end of the block); opening it again afterwards migrates it."""
    module = sqlite_migrations if engine == "sqlite" else pg_migrations
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "MIGRATIONS", module.MIGRATIONS[:version])
        if version < GUIDS_BY_URL_STEP:
            _write_subscriptions_as_before_step_32(patch)
        db = create_engine(config.database)
        await db.open()
        try:
            yield db
        finally:
            await db.close()


GUIDS_BY_URL_STEP = sqlite_migrations.MIGRATIONS.index(sqlite_steps_0_4.GUIDS_BY_URL) + 1
# The store's subscription writes as the code before step 32 made them: no
# `guid_by_url` column. Each statement takes the parameters of today's, and drops the
# one for that column in a condition that is always true.
_STATE = ", ".join(subscriptions._STATE)
_SET = ", ".join(f"{c} = ?" for c in subscriptions._STATE)
_KEPT = ", ".join(f"{c} = ?" for c in subscriptions._KEPT)
_TRUE = "(CAST(? AS TEXT) IS NULL OR 1 = 1)"
_BEFORE_STEP_32 = {
    "_INSERT": f"INSERT INTO subscriptions (user_id, sync_id, {_STATE}) "
    f"SELECT ?, ?, {', '.join('?' * len(subscriptions._STATE))} WHERE {_TRUE}",
    "_UPDATE": f"UPDATE subscriptions SET {_SET} WHERE user_id = ? AND sync_id = ?",  # noqa: S608
    "_GUID_INDEXED": "",
    "_UPDATE_KEPT": f"UPDATE subscriptions SET {_KEPT} "  # noqa: S608
    f"WHERE {_TRUE} AND user_id = ? AND sync_id = ?",
}


def _write_subscriptions_as_before_step_32(patch: pytest.MonkeyPatch) -> None:
    for name, sql in _BEFORE_STEP_32.items():
        patch.setattr(subscriptions, name, sql)

    async def index_guids(conn: object, user_id: int) -> int:
        return 0  # every row is in the guid's index before step 32

    patch.setattr(subscriptions, "index_guids", index_guids)


async def add_user(db: Engine, name: str, password: str | None = None) -> int:
    """A user made by SQL, as any release since the first has the table; with a
    `password`, one that can sign in (else the hash is no hash)."""
    password_hash = "x"
    if password is not None:
        passwords = cheap_passwords(threads=1)
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


async def store_before_step_30(
    db: Engine, user_id: int, actions: list[EpisodeAction], received_at: int
) -> None:
    """`episodes.store` on a database from step 19 to 29: the rows the releases of
    those steps stored. The store also keeps the person's count of actions (step 30),
    whose column such a database lacks: it is there for the write and gone after."""
    async with db.write() as conn:
        await conn.execute(
            "ALTER TABLE users ADD COLUMN episode_action_count INTEGER NOT NULL DEFAULT 0"
        )
        batch = await episodes.resolve(conn, user_id, actions)
        await episodes.store(conn, batch, received_at)
        await conn.execute("ALTER TABLE users DROP COLUMN episode_action_count")


# --- rows as the releases before schema step 19 wrote them (one counter for every
# user's changes; episode actions each with their URLs, a content hash and, from step
# 7 on, their stored view). The current store writes another schema.


def old_content_hash(a: EpisodeAction) -> bytes:
    """What the release before stored as an action's content hash (its dedup key)."""
    fields = [a.podcast_url, a.episode_url, a.action, a.occurred_at, a.started, a.position,
              a.total, a.device_id, a.guid]  # fmt: skip
    return hashlib.sha256(json.dumps(fields).encode("ascii")).digest()


async def store_actions_as_before(
    db: Engine, user_id: int, actions: list[EpisodeAction], received_at: int, version: int
) -> None:
    """Insert episode actions as a release of schema `version` (5 to 15) did."""
    columns = (
        "user_id, podcast_url, podcast_key, episode_url, action, occurred_at, device_id, "
        "guid, started, position, total, received_at, content_hash"
    )
    rows = []
    for a in actions:
        row = [user_id, a.podcast_url, a.podcast_key, a.episode_url, a.action, a.occurred_at,
               a.device_id, a.guid, a.started, a.position, a.total, received_at,
               old_content_hash(a)]  # fmt: skip
        if version >= 7:
            row.append(
                episode_action_view(a.podcast_url, a.episode_url, a.action, a.occurred_at,
                                    a.device_id, a.guid, a.started, a.position, a.total)
            )  # fmt: skip
        rows.append(row)
    if version >= 7:
        columns += ", view"
    marks = ", ".join("?" * len(rows[0]))
    async with db.write() as conn:
        await conn.execute_many(
            f"INSERT INTO episode_actions ({columns}) VALUES ({marks})",  # noqa: S608 - constant
            rows,
        )


async def subscribe_as_before(
    db: Engine, user_id: int, urls: list[str], now: int, unsubscribed: bool = False
) -> None:
    """Subscribe to `urls` (or unsubscribe from them, when they are held) as the
    releases before step 19 did: each change takes the next number of the one counter
    of the database (`meta.change_seq`)."""
    async with db.write() as conn:
        for url in urls:
            row = await conn.fetch_one(
                "UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) "
                "WHERE key = 'change_seq' RETURNING CAST(value AS BIGINT)"
            )
            seq = int(row[0])
            held = await conn.fetch_one(
                "SELECT id FROM subscriptions WHERE user_id = ? AND url_key = ?",
                (user_id, url_key(url)),
            )
            if held is not None:
                await conn.execute(
                    "UPDATE subscriptions SET unsubscribed_at = ?, last_updated = ?, "
                    "change_seq = ?, changed_at = ? WHERE id = ?",
                    (now if unsubscribed else None, now, seq, now, held[0]),
                )
                continue
            entity = Subscription(None, user_id, new_uuid7(), derive_guid(url), url,
                                  url_key(url), None, now, None, now, None, seq, now)  # fmt: skip
            await conn.execute(
                "INSERT INTO subscriptions (user_id, sync_id, guid, feed_url, url_key, "
                "subscribed_at, last_updated, change_seq, changed_at, view) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (user_id, entity.sync_id, entity.guid, url, entity.url_key, now, now, seq,
                 now, subscription_view(entity)),
            )  # fmt: skip
            await conn.execute(
                "UPDATE users SET entity_count = entity_count + 1 WHERE id = ?", (user_id,)
            )
