"""What a reader of a gpodder or Nextcloud stream was served is known to every worker
and process (gpodder spec 4.4; the Nextcloud API's window), on both engines: two
apps on one database, as two workers of `server.workers` or two processes behind a
balancer, each with its own memory. A read answered by one and a write answered by
the other never skip what a third device wrote in between."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiohttp import DummyCookieJar
from aiohttp.test_utils import TestClient

from podsync.config import Config
from podsync.services.served import ServedPositions
from podsync.storage.engine import create_engine
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.store import users
from podsync.web.app import create_app
from podsync.web.keys import CONFIG, DB
from tests.support.gpodder_support import basic, login_cookie
from tests.support.migration_support import add_user, database_at

pytestmark = pytest.mark.both_engines

A, B, C = "http://a.example/feed", "http://b.example/feed", "http://c.example/feed"
NC = "/index.php/apps/gpoddersync"
# Positions a write only makes better are stored a moment after its answer
# (services/served.py); an app's next call comes later than this.
STORED_LATER_S = 0.3
# The schema step that made the table (found by its text: steps may be renumbered).
SERVED_STEP = next(i for i, step in enumerate(MIGRATIONS, 1) if "served_positions" in str(step))


@pytest.fixture
async def other(gp: TestClient[Any, Any], aiohttp_client: Any) -> TestClient[Any, Any]:
    """A second app on the same database, with a memory of its own."""
    result: TestClient[Any, Any] = await aiohttp_client(
        create_app(gp.app[CONFIG]), cookie_jar=DummyCookieJar()
    )
    return result


async def json_of(response: Any) -> Any:
    assert response.status == 200, await response.text()
    return await response.json()


async def test_a_post_to_one_app_answers_what_the_other_served(
    gp: TestClient[Any, Any], other: TestClient[Any, Any]
) -> None:
    session = {"Cookie": f"sessionid={await login_cookie(gp)}"}
    url = "/api/2/subscriptions/alice/phone.json"
    served = (await json_of(await gp.get(f"{url}?since=0", headers=session)))["timestamp"]
    laptop = "/api/2/subscriptions/alice/laptop.json"
    await json_of(await other.post(laptop, json={"add": [B]}, headers=basic()))
    posted = await json_of(await other.post(url, json={"add": [A]}, headers=session))
    assert posted["timestamp"] == served  # not past the laptop's write: that would skip it
    later = await json_of(await gp.get(f"{url}?since={posted['timestamp']}", headers=session))
    assert B in later["add"]


async def test_a_device_without_a_cookie_is_answered_by_its_device(
    gp: TestClient[Any, Any], other: TestClient[Any, Any]
) -> None:
    """Kasts sends Basic credentials and no cookie: the device's served cursor."""
    url = "/api/2/subscriptions/alice/kasts.json"
    served = (await json_of(await gp.get(f"{url}?since=0", headers=basic())))["timestamp"]
    laptop = "/api/2/subscriptions/alice/laptop.json"
    await json_of(await gp.post(laptop, json={"add": [B]}, headers=basic()))
    posted = await json_of(await other.post(url, json={"add": [A]}, headers=basic()))
    assert posted["timestamp"] == served


async def test_an_episode_post_to_one_app_answers_what_the_other_served(
    gp: TestClient[Any, Any], other: TestClient[Any, Any]
) -> None:
    session = {"Cookie": f"sessionid={await login_cookie(gp)}"}
    url = "/api/2/episodes/alice.json"
    served = (await json_of(await gp.get(f"{url}?since=0", headers=session)))["timestamp"]
    await json_of(await other.post(url, json=[play(1, "laptop")], headers=basic()))
    posted = await json_of(await other.post(url, json=[play(2, "phone")], headers=session))
    assert posted["timestamp"] == served
    later = await json_of(await gp.get(f"{url}?since={posted['timestamp']}", headers=session))
    assert {a["episode"] for a in later["actions"]} == {play(1)["episode"], play(2)["episode"]}


async def test_a_post_answer_is_known_to_the_other_app_without_an_echo(
    gp: TestClient[Any, Any], other: TestClient[Any, Any]
) -> None:
    """Two writes of one client in a row, through both apps, nobody else writing: the
    second answers the maximum after it, as one app would (no echo of the first)."""
    session = {"Cookie": f"sessionid={await login_cookie(gp)}"}
    url = "/api/2/subscriptions/alice/phone.json"
    await json_of(await gp.get(f"{url}?since=0", headers=session))
    await json_of(await gp.post(url, json={"add": [A]}, headers=session))
    await asyncio.sleep(STORED_LATER_S)
    posted = await json_of(await other.post(url, json={"add": [C]}, headers=session))
    after = await json_of(await gp.get(f"{url}?since={posted['timestamp']}", headers=session))
    assert after["add"] == []


async def test_a_poll_at_the_head_writes_nothing(gp: TestClient[Any, Any]) -> None:
    session = {"Cookie": f"sessionid={await login_cookie(gp)}"}
    url = "/api/2/subscriptions/alice/phone.json"
    await json_of(await gp.post(url, json={"add": [A]}, headers=session))
    first = await json_of(await gp.get(f"{url}?since=0", headers=session))
    db: Any = gp.app[DB]
    if not hasattr(db, "commits"):
        pytest.skip("the commit count is SQLite's")
    # What the first pull stores a moment later lands first (later still on a busy
    # machine): the count is taken once it has been still for a while.
    before = -1
    for _ in range(20):
        if db.commits == before:
            break
        before = db.commits
        await asyncio.sleep(2 * STORED_LATER_S)
    for _ in range(3):
        again = await json_of(await gp.get(f"{url}?since={first['timestamp']}", headers=session))
        assert again == {"add": [], "remove": [], "timestamp": first["timestamp"]}
    assert db.commits == before


async def test_a_nextcloud_pull_from_another_app_reaches_back_to_the_last_pull(
    gp: TestClient[Any, Any], other: TestClient[Any, Any]
) -> None:
    """AntennaPod's next `since` after an upload is its own clock, minutes after its
    last pull; what another device wrote in between reaches it whichever app answers."""
    pulled = await json_of(await gp.get(f"{NC}/subscriptions?since=0", headers=basic()))
    laptop = "/api/2/subscriptions/alice/laptop.json"
    await json_of(await gp.post(laptop, json={"add": [B]}, headers=basic()))
    await asyncio.sleep(STORED_LATER_S)
    since = max(pulled["timestamp"], int(time.time())) + 600  # its clock, after an upload
    got = await json_of(await other.get(f"{NC}/subscriptions?since={since}", headers=basic()))
    assert B in got["add"]


def play(n: int, device: str = "phone") -> dict[str, Any]:
    return {
        "podcast": "http://example.com/feed.xml",
        "episode": f"http://example.com/{n}.mp3",
        "action": "play",
        "timestamp": "2026-11-25T10:00:00",
        "started": 0,
        "position": 60,
        "total": 3600,
        "device": device,
    }


async def test_a_database_of_the_release_before_gets_the_table(
    config: Config, db_engine: str
) -> None:
    """Schema step 16 on a database made by the release before: its users are kept,
    and a position is stored and read back."""
    async with database_at(config, db_engine, SERVED_STEP - 1) as old:
        user_id = await add_user(old, "carol")
    db = create_engine(config.database)
    await db.open()
    try:
        async with db.read() as conn:
            assert await users.get_by_id(conn, user_id) is not None
        positions = ServedPositions(db)
        await positions.store(user_id, {"s:x:subscriptions": 7})
        assert (await positions.read(user_id, ["s:x:subscriptions"]))["s:x:subscriptions"][0] == 7
    finally:
        await db.close()


async def test_a_position_being_written_is_read_until_its_write_commits(config: Config) -> None:
    """A POST's cursor is stored a moment later, by a flush that waits for the write
    turn like any write; a read meanwhile (the app's next POST) finds it there, not
    the position stored before (a slow write once answered an older cursor)."""
    db = create_engine(config.database)
    await db.open()
    try:
        user_id = await add_user(db, "dora")
        positions = ServedPositions(db, flush_s=0)
        key = "s:x:episodes"
        await positions.store(user_id, {key: 5})
        positions.store_later(user_id, {key: 9})
        async with db.write():  # the flush waits for this write to end
            await asyncio.sleep(0.05)  # it took what waited and waits for the turn
            assert not positions._waiting
            assert (await positions.read(user_id, [key]))[key][0] == 9
        await asyncio.sleep(0.05)
        assert (await positions.read(user_id, [key]))[key][0] == 9
        assert not positions._flushing
    finally:
        await positions.close()
        await db.close()
