"""Episode actions as gpodder clients read them, on both engines: a pull answers
exactly the bytes the actions encode to as compact ASCII JSON (the pull's renderer
writes what schema step 7's `episode_action_view` writes, for any field values,
however the store keeps them); a database of an earlier release, migrated, answers the very
views that release stored."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from podsync import timestamps
from podsync.config import Config
from podsync.episode_keys import ACTION_NAMES
from podsync.model import json_string
from podsync.services.episodes.pieces import render
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.gpodder.episodes import EpisodeService
from podsync.storage.engine import create_engine
from podsync.storage.migrations import postgres as pg_migrations
from podsync.storage.migrations import sqlite as sqlite_migrations
from podsync.storage.migrations.episode_views import episode_action_view
from podsync.store.episode_actions import ActionRow
from tests.support.gpodder_support import basic

pytestmark = pytest.mark.both_engines

URL = "/api/2/episodes/alice.json"
# What json_ok sends: compact, ASCII.
COMPACT = json.JSONEncoder(separators=(",", ":")).encode


def expected(
    podcast: str,
    episode: str,
    action: str,
    occurred_at: int,
    device: str | None,
    guid: str | None,
    started: int | None,
    position: int | None,
    total: int | None,
) -> dict[str, Any]:
    """An action as the gpodder spec shows it (the reference the stored bytes match)."""
    moment = timestamps.format(occurred_at - occurred_at % 1_000_000)
    out: dict[str, Any] = {
        "podcast": podcast,
        "episode": episode,
        "action": action,
        "timestamp": moment.removesuffix("Z")[:19],
    }
    if guid is not None:
        out["guid"] = guid
    if device is not None:
        out["device"] = device
    if action == "play" and position is not None:
        if started is not None:
            out["started"] = started
        out["position"] = position
        if total is not None:
            out["total"] = total
    return out


optional_int = st.none() | st.integers(0, 2**31 - 1)


@settings(max_examples=300, deadline=None)
@given(
    podcast=st.text(min_size=1),
    episode=st.text(min_size=1),
    action=st.sampled_from(["new", "download", "play", "delete", "flattr"]),
    occurred_at=st.integers(timestamps.MIN_US, timestamps.MAX_US),
    device=st.none() | st.text(),
    guid=st.none() | st.text(),
    started=optional_int,
    position=optional_int,
    total=optional_int,
)
def test_the_view_is_the_compact_ascii_json_of_the_action(**fields: Any) -> None:
    args = list(fields.values())
    assert episode_action_view(*args) == COMPACT(expected(*args)).encode("ascii")


SENT = [
    {
        "podcast": "http://example.com/f\u00e9ed.xml",
        "episode": 'http://example.com/"quoted"/1.mp3',
        "action": "play",
        "timestamp": "0999-03-04T05:06:07.999",
        "started": 0,
        "position": 60,
        "total": 300,
        "device": "phone",
        "guid": "g\u2603",
    },
    {"podcast": "http://example.com/a.xml", "episode": "http://e.com/2", "action": "download"},
    {
        "podcast": "http://example.com/a.xml",
        "episode": "http://e.com/3",
        "action": "play",
        "position": 5,
        "timestamp": 1772600767,
    },
]


async def _pull_bytes(gp: TestClient[Any, Any], query: str = "since=0") -> bytes:
    response = await gp.get(f"{URL}?{query}", headers=basic())
    assert response.status == 200, await response.text()
    assert response.headers["Content-Type"] == "application/json; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-store"
    return await response.read()


async def test_a_pull_is_the_compact_json_of_its_actions(gp: TestClient[Any, Any]) -> None:
    response = await gp.post(URL, json=SENT, headers=basic())
    assert response.status == 200, await response.text()
    for query in ("since=0", "since=0&aggregated=true", "podcast=http://example.com/a.xml"):
        body = await _pull_bytes(gp, query)
        decoded = json.loads(body)
        assert body == COMPACT(decoded).encode("ascii"), query
    everything = json.loads(await _pull_bytes(gp))
    assert everything["actions"][0] == {
        "podcast": "http://example.com/f\u00e9ed.xml",
        "episode": 'http://example.com/"quoted"/1.mp3',
        "action": "play",
        "timestamp": "0999-03-04T05:06:07",
        "guid": "g\u2603",
        "device": "phone",
        "started": 0,
        "position": 60,
        "total": 300,
    }
    assert everything["actions"][2]["timestamp"] == "2026-03-04T05:06:07"
    assert b'/f\\u00e9ed.xml"' in await _pull_bytes(gp)  # ASCII, as json_ok sends
    empty = await _pull_bytes(gp, f"since={everything['timestamp']}")
    assert empty == b'{"actions":[],"timestamp":%d}' % everything["timestamp"]


async def test_migrating_an_earlier_database_fills_every_view(
    config: Config, db_engine: str
) -> None:
    """A database of the release before the view column, with actions in it (written
    as that release wrote them), migrated on open: pulls answer as before."""
    module = sqlite_migrations if db_engine == "sqlite" else pg_migrations
    rows = [
        (
            "http://example.com/a.xml",
            "example.com/a.xml",
            f"http://e.com/{n}",
            "play" if n % 2 else "download",
            1772600767_250000 + n,
            None if n % 3 else "phone",
            None if n % 5 else f"g{n}",
            0,
            n,
            None if n % 7 else 999,
        )
        for n in range(1, 12_001)  # past one backfill chunk
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "MIGRATIONS", module.MIGRATIONS[:5])
        db = create_engine(config.database)
        await db.open()
        try:
            async with db.write() as conn:
                await conn.execute(
                    "INSERT INTO users (name, password_hash, created_at) VALUES ('old', 'x', 0)"
                )
                user = (await conn.fetch_one("SELECT id FROM users WHERE name = 'old'"))[0]
                await conn.execute_many(
                    "INSERT INTO episode_actions (user_id, podcast_url, podcast_key, "
                    "episode_url, action, occurred_at, device_id, guid, started, position, "
                    "total, received_at, content_hash) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
                    [(user, *row, n.to_bytes(4, "big")) for n, row in enumerate(rows)],
                )
        finally:
            await db.close()
    with pytest.MonkeyPatch.context() as patch:  # the step that stored the views
        patch.setattr(module, "MIGRATIONS", module.MIGRATIONS[:7])
        db = create_engine(config.database)
        await db.open()
        try:
            async with db.read() as conn:
                got = await conn.fetch_all(
                    "SELECT podcast_url, episode_url, action, occurred_at, device_id, guid, "
                    "started, position, total, view FROM episode_actions ORDER BY seq"
                )
        finally:
            await db.close()
    assert len(got) == len(rows)
    for row in got:
        fields = list(row[:9])
        assert bytes(row[9]) == COMPACT(expected(*fields)).encode("ascii")
    # Migrated on to the current schema (no stored view), a pull answers those bytes.
    db = create_engine(config.database)
    await db.open()
    try:
        service = EpisodeService(db, 20_000, EpisodeWrites(db))
        pull = await service.pull(user, "0", None, None, False)
        body = pull.pieces.first + b"".join([piece async for piece in pull.pieces.rest()])
    finally:
        await db.close()
    assert body == b",".join(bytes(row[9]) for row in got)


@settings(max_examples=300, deadline=None)
@given(
    podcast=st.text(min_size=1),
    spelled=st.none() | st.text(min_size=1),
    prefix=st.sampled_from(["", "http://e.com/", 'https://\u00e9/"']),
    rest=st.text(),
    prefixed=st.booleans(),
    action=st.sampled_from(ACTION_NAMES),
    occurred_at=st.integers(timestamps.MIN_US, timestamps.MAX_US),
    device=st.none() | st.text(),
    episode_guid=st.none() | st.text(min_size=1),
    guid=st.none() | st.text(),
    started=optional_int,
    position=optional_int,
    total=optional_int,
)
def test_a_pull_renders_what_the_view_is(
    podcast: str, spelled: str | None, prefix: str, rest: str, prefixed: bool, action: str,
    occurred_at: int, device: str | None, episode_guid: str | None, guid: str | None,
    started: int | None, position: int | None, total: int | None,
) -> None:  # fmt: skip
    """However a row keeps it (the feed's spelling or its own, the URL with or without
    the feed's prefix, the episode's guid or its own or none), the pull writes the
    action's view."""
    row = ActionRow(1, 7, rest, int(prefixed), episode_guid, ACTION_NAMES.index(action),
                    occurred_at, device, started, position, total, guid, spelled)  # fmt: skip
    feeds = {7: (json_string(podcast), prefix)}
    own_guid = episode_guid if guid is None else (guid or None)
    view = episode_action_view(
        spelled if spelled is not None else podcast, prefix + rest if prefixed else rest,
        action, occurred_at, device, own_guid, started, position, total,
    )  # fmt: skip
    assert render([row], feeds).encode("ascii") == view


async def test_concurrent_pulls_and_pushes_agree(gp: TestClient[Any, Any]) -> None:
    """Pushes and pulls interleaved: every pull is valid compact JSON and a final
    pull from 0 has every action once, in upload order."""

    async def push(n: int) -> None:
        batch = [
            {"podcast": "http://p.example/f.xml", "episode": f"http://p.example/{n}/{i}.mp3",
             "action": "play", "position": i, "started": 0, "total": 9}
            for i in range(30)
        ]  # fmt: skip
        response = await gp.post(URL, json=batch, headers=basic())
        assert response.status == 200

    async def pull() -> None:
        body = await _pull_bytes(gp)
        assert body == COMPACT(json.loads(body)).encode("ascii")

    await asyncio.gather(*(push(n) for n in range(8)), *(pull() for _ in range(8)))
    actions = json.loads(await _pull_bytes(gp))["actions"]
    assert len(actions) == 8 * 30
    assert len({a["episode"] for a in actions}) == 8 * 30
