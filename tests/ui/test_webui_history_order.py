"""The history in the order things happened, on SQLite and on PostgreSQL: an old play
uploaded after a newer one (a device syncing a backlog) stays below it; the pages
walk both ways on a (time, seq) key, ties by arrival; the action filter; schema step
14 on a database of the release before."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.feeds import url_key
from podsync.services.passwords import PasswordService
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.store.episodes import EpisodeAction
from podsync.web.app import create_app
from podsync.web.keys import DB
from tests.conftest import PASSWORD, with_accounts
from tests.support.gpodder_support import basic
from tests.support.migration_support import add_user, database_at, store_actions_as_before
from tests.ui.test_webui_http import sign_in

pytestmark = pytest.mark.both_engines

FEED = "https://feeds.example.com/show.xml"
# The schema of the release before: every step before the one that made the time
# index (found by what it makes, so later steps and renumbering leave it right).
RELEASE_BEFORE = next(
    n
    for n, step in enumerate(MIGRATIONS)
    if isinstance(step, str) and "episode_actions_time" in step
)
NAMES = re.compile(r"ep-(\d{3})\.mp3")
LINK = re.compile(r'href="(/ui/history\?[^"]+)" rel="(prev|next)"')


async def upload(ui: TestClient[Any, Any], actions: list[dict[str, Any]]) -> None:
    """As AntennaPod does: the gpodder API's episode upload, with Basic auth."""
    response = await ui.post("/api/2/episodes/alice.json", json=actions, headers=basic())
    assert response.status == 200, await response.text()


def play(n: int, when: str, device: str, position: int = 600) -> dict[str, Any]:
    return {
        "podcast": FEED,
        "episode": f"https://cdn.example.com/ep-{n:03d}.mp3",
        "action": "play",
        "timestamp": when,
        "started": 0,
        "position": position,
        "total": 3600,
        "device": device,
    }


async def shown(ui: TestClient[Any, Any], path: str) -> tuple[list[int], dict[str, str]]:
    text = await (await ui.get(path.replace("&amp;", "&"))).text()
    return [int(n) for n in NAMES.findall(text)], {rel: href for href, rel in LINK.findall(text)}


@pytest.fixture
async def ui(aiohttp_client: Any, config: Config) -> TestClient[Any, Any]:
    async def seed(accounts: Any) -> None:
        await accounts.add_user("alice", PASSWORD)

    await with_accounts(config, seed)
    client: TestClient[Any, Any] = await aiohttp_client(create_app(config))
    await sign_in(client)
    return client


async def test_an_old_play_uploaded_after_a_newer_one_stays_below_it(
    ui: TestClient[Any, Any],
) -> None:
    await upload(ui, [play(2, "2026-11-20T10:00:00", "tablet")])
    # The phone comes back online with a backlog: its play happened weeks earlier.
    await upload(ui, [play(1, "2026-11-01T10:00:00", "phone")])
    order, _ = await shown(ui, "/ui/history")
    assert order == [2, 1]
    text = await (await ui.get("/ui/history")).text()
    assert text.index("2026-11-20 10:00") < text.index("2026-11-01 10:00")
    # Two actions at the same moment: the later arrival first.
    await upload(ui, [play(3, "2026-11-20T10:00:00", "tablet", 30)])
    assert (await shown(ui, "/ui/history"))[0] == [3, 2, 1]


async def test_pages_walk_both_ways_by_the_actions_own_time(ui: TestClient[Any, Any]) -> None:
    # Uploaded newest first: arrival order is the reverse of the order they happened.
    await upload(
        ui,
        [
            play(n, f"2026-10-{1 + n // 24:02d}T{n % 24:02d}:00:00", "phone")
            for n in range(119, -1, -1)
        ],
    )
    first, links = await shown(ui, "/ui/history")
    assert first == list(range(119, 69, -1)) and set(links) == {"next"}
    second, links2 = await shown(ui, links["next"])
    assert second == list(range(69, 19, -1)) and set(links2) == {"prev", "next"}
    third, links3 = await shown(ui, links2["next"])
    assert third == list(range(19, -1, -1)) and set(links3) == {"prev"}
    back, links4 = await shown(ui, links3["prev"])
    assert back == second and set(links4) == {"prev", "next"}
    front, _ = await shown(ui, links4["prev"])
    assert front == first
    # A key that is no key is the first page, not an error.
    for junk in ("before=x", "before=1.2.3", "after=-5.1", "before=99999999999999999999.1"):
        response = await ui.get(f"/ui/history?{junk}")
        assert response.status == 200, junk


async def test_the_action_filter(ui: TestClient[Any, Any]) -> None:
    download = {
        "podcast": FEED,
        "episode": "https://cdn.example.com/ep-007.mp3",
        "action": "download",
        "timestamp": "2026-11-02T09:00:00",
        "device": "phone",
    }
    await upload(ui, [play(1, "2026-11-01T10:00:00", "phone"), download])
    assert (await shown(ui, "/ui/history"))[0] == [7, 1]
    assert (await shown(ui, "/ui/history?action=play"))[0] == [1]
    assert (await shown(ui, "/ui/history?action=download"))[0] == [7]
    text = await (await ui.get("/ui/history?action=delete")).text()
    assert "matches this filter" in text and NAMES.findall(text) == []
    # An action that is no action shows everything (and says nothing of a filter).
    assert (await shown(ui, "/ui/history?action=flattr%27"))[0] == [7, 1]


async def test_step_14_on_a_database_of_the_release_before(
    aiohttp_client: Any, config: Config, db_engine: str
) -> None:
    """The release before stored a backlog's play after a newer one; once the step
    has run, the history shows them in the order they happened."""
    passwords = PasswordService.for_config(config.auth)
    try:
        async with database_at(config, db_engine, RELEASE_BEFORE) as db:
            user_id = await add_user(db, "alice", PASSWORD)
            actions = [
                EpisodeAction(
                    0, FEED, url_key(FEED), f"https://cdn.example.com/ep-{n:03d}.mp3",
                    "play", when, "phone", None, 0, 60, 3600,
                )
                for n, when in ((2, 1_763_632_800_000_000), (1, 1_761_991_200_000_000))
            ]  # fmt: skip
            await store_actions_as_before(
                db, user_id, actions, 1_764_000_000_000_000, RELEASE_BEFORE
            )
    finally:
        passwords.close()
    client: TestClient[Any, Any] = await aiohttp_client(create_app(config))  # migrates
    async with client.app[DB].read() as conn:
        if db_engine == "sqlite":
            found = await conn.fetch_one(
                "SELECT count(*) FROM sqlite_master WHERE name = 'episode_actions_time'"
            )
        else:
            found = await conn.fetch_one(
                "SELECT count(*) FROM pg_indexes "
                "WHERE indexname = 'episode_actions_time' AND schemaname = current_schema()"
            )
    assert int(found[0]) == 1
    await sign_in(client)
    assert (await shown(client, "/ui/history"))[0] == [2, 1]
    await upload(client, [play(3, "2025-10-01T10:00:00", "tablet")])  # older still
    assert (await shown(client, "/ui/history"))[0] == [2, 1, 3]
