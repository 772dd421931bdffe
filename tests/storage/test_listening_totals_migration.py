"""Schema step 26 on both engines: the statistics' running totals are filled from the
plays a database of the release before holds (each stretch of an episode once, in the
order the plays happened), and the statistics page of a real `podsync serve` on the
migrated database shows them; plays written after the upgrade add to them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from podsync.config import Config
from podsync.feeds import url_key
from podsync.storage.engine import create_engine
from podsync.store.episodes import EpisodeAction
from tests.conftest import PASSWORD, ServeProcess
from tests.support.gpodder_support import basic, call
from tests.support.migration_support import add_user, database_at, store_before_step_30
from tests.support.ui_session import Browser
from tests.ui.test_webui_stats import section

pytestmark = pytest.mark.both_engines

NEWS, TALK = "https://news.example/feed.xml", "https://talk.example/feed.xml"


def play(
    feed: str, n: int, at: datetime, device: str, numbers: tuple[int, int, int]
) -> EpisodeAction:
    started, position, total = numbers
    return EpisodeAction(
        0, feed, url_key(feed), f"{feed}/{n}.mp3", "play", int(at.timestamp() * 1e6), device,
        None, started, position, total,
    )  # fmt: skip


async def test_step_26_fills_the_totals_from_the_plays_before_and_keeps_them_after(
    config: Config, db_engine: str, serve_process: Callable[..., ServeProcess]
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0)
    at = [min(monday + timedelta(minutes=n), now) for n in range(6)]
    async with database_at(config, db_engine, 25) as db:
        user_id = await add_user(db, "alice", PASSWORD)
        plays = [
            play(NEWS, 1, at[0], "phone", (0, 1800, 3600)),
            play(NEWS, 1, at[1], "tablet", (900, 2700, 3600)),  # 15 min new
            play(NEWS, 1, at[2], "phone", (0, 1800, 3600)),  # nothing new
            play(TALK, 2, at[3], "phone", (4000, 4000, 4000)),  # finished, no time
        ]
        await store_before_step_30(db, user_id, plays, int(at[3].timestamp() * 1_000_000))
    server = await asyncio.to_thread(serve_process, config)
    browser = Browser(server.url)
    try:
        await browser.sign_in("alice")
        status, html = await browser.page("/ui/stats")
        assert status == 200
        assert section(html, "Time listened per week")[-1][2] == "45 min"
        months = section(html, "Episodes finished per month")
        assert sum(int(value) for _, _, value in months) == 1
        # After the upgrade the write path adds only what is new: 45-50 min of NEWS 1.
        late = min(monday + timedelta(minutes=30), now).strftime("%Y-%m-%dT%H:%M:%S")
        body = (
            f'[{{"podcast": "{NEWS}", "episode": "{NEWS}/1.mp3", "action": "play", '
            f'"device": "phone", "timestamp": "{late}", "started": 0, "position": 3000, '
            '"total": 3600}]'
        ).encode()
        answer = await asyncio.to_thread(
            call, server.url, "POST", "/api/2/episodes/alice.json", body, **basic()
        )
        assert answer.status == 200, answer.body
        status, html = await browser.page("/ui/stats")
        assert section(html, "Time listened per week")[-1][2] == "50 min"
        # TALK 2, played once before the upgrade, kept no row of its own: its play is
        # read instead when it is played again (10 min new, finished once still).
        db = create_engine(config.database)
        await db.open()
        try:
            async with db.read() as conn:
                assert len(await conn.fetch_all("SELECT * FROM listened_episodes")) == 1
        finally:
            await db.close()
        body = (
            f'[{{"podcast": "{TALK}", "episode": "{TALK}/2.mp3", "action": "play", '
            f'"device": "tablet", "timestamp": "{late}", "started": 0, "position": 600, '
            '"total": 4000}]'
        ).encode()
        answer = await asyncio.to_thread(
            call, server.url, "POST", "/api/2/episodes/alice.json", body, **basic()
        )
        assert answer.status == 200, answer.body
        status, html = await browser.page("/ui/stats")
        assert section(html, "Time listened per week")[-1][2] == "1 h 00 min"
        assert sum(int(value) for _, _, value in section(html, "Episodes finished per month")) == 1
    finally:
        await browser.close()
