"""A user's change positions are the user's own, on both engines: another user's
writes leave alice's change feed as it was (the same `next_since`, a 304 to her
conditional poll at the head), and her gpodder and Nextcloud streams too; her numbers
go up by her own writes only. On PostgreSQL, writers of different users never wait
for each other: bob's batch commits while alice's write transaction is held open."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.config import Config
from podsync.feeds import derive_guid, new_uuid7, url_key
from podsync.model import Subscription
from podsync.rules import Subscribe
from podsync.services.episodes.bounds import UploadBounds
from podsync.services.episodes.writes import EpisodeWrites
from podsync.services.sync import SyncService
from podsync.storage.engine import create_engine
from podsync.store import meta, subscriptions
from tests.conftest import login
from tests.support.gpodder_support import basic
from tests.support.sync_helpers import action, post_batch

Client = TestClient[Any, Any]
NC = "/index.php/apps/gpoddersync"


def play(n: int, user: str) -> dict[str, Any]:
    return {
        "podcast": f"https://{user}.example/feed.xml",
        "episode": f"https://{user}.example/{n}.mp3",
        "action": "play",
        "timestamp": f"2026-01-01T00:00:{n % 60:02d}",
        "position": n,
        "started": 0,
        "total": 600,
    }


async def _get(client: Client, path: str, headers: dict[str, str]) -> tuple[int, bytes, Any]:
    response = await client.get(path, headers=headers)
    return response.status, await response.read(), response.headers


@pytest.mark.both_engines
async def test_another_users_writes_leave_alices_feeds_as_they_were(
    client: Client, alice: str, create_user: Any
) -> None:
    await create_user("bob")
    bob = (await login(client, "bob"))["access_token"]
    me = {"Authorization": f"Bearer {alice}"}
    await post_batch(client, alice, [action(feed_url="https://alice.example/feed.xml")])
    gp = await client.post("/api/2/episodes/alice.json", json=[play(1, "alice")], headers=basic())
    assert gp.status == 200
    status, feed, _ = await _get(client, "/api/v1/sync", me)
    assert status == 200
    head = (await (await client.get("/api/v1/sync", headers=me)).json())["next_since"]
    headers = (await _get(client, head, me))[2]
    reads = {
        "gpodder subscriptions": "/api/2/subscriptions/alice/phone.json?since=0",
        "gpodder episodes": "/api/2/episodes/alice.json?since=0",
        "Nextcloud subscriptions": f"{NC}/subscriptions?since=0",
    }
    before = {name: (await _get(client, path, basic()))[1] for name, path in reads.items()}
    for n in range(5):  # bob writes five batches, through both APIs
        await post_batch(client, bob, [action(feed_url=f"https://bob.example/{n}.xml")])
        pushed = await client.post(
            "/api/2/episodes/bob.json", json=[play(n, "bob")], headers=basic("bob")
        )
        assert pushed.status == 200
    # The conditional poll at the head: not modified. Without the tag: the same body.
    conditional = await _get(client, head, {**me, "If-None-Match": headers["ETag"]})
    assert conditional[0] == 304, conditional[1]
    again = await _get(client, "/api/v1/sync", me)
    assert again[1] == feed
    assert (await (await client.get(head, headers=me)).json())["next_since"] == head
    after = {name: (await _get(client, path, basic()))[1] for name, path in reads.items()}
    after["Nextcloud subscriptions"] = before["Nextcloud subscriptions"]  # its clock moved
    assert after == before
    # alice's own next change is her next number: one past what her cursor carries.
    await post_batch(client, alice, [action(feed_url="https://alice.example/2.xml")])
    later = await (await client.get(head, headers=me)).json()
    assert [r["data"]["feed_url"] for r in later["results"]] == ["https://alice.example/2.xml"]


@pytest.mark.both_engines
async def test_numbers_count_the_users_own_changes(
    client: Client, alice: str, create_user: Any
) -> None:
    """The cursor's position is the user's count of changes, whoever else writes."""
    await create_user("bob")
    bob = (await login(client, "bob"))["access_token"]
    bobs = [play(n, "bob") for n in range(3)]
    assert (
        await client.post("/api/2/episodes/bob.json", json=bobs, headers=basic("bob"))
    ).status == 200
    for n in range(3):
        await post_batch(client, bob, [action(feed_url=f"https://bob.example/{n}.xml")])
        await post_batch(client, alice, [action(feed_url=f"https://alice.example/{n}.xml")])
    empty = {"add": [], "remove": []}
    pushed = await client.post("/api/2/subscriptions/alice/phone.json", json=empty, headers=basic())
    assert (await pushed.json())["timestamp"] == 2 * 3 + 1  # gpodder: 2 * H + 1, H = 3
    mine = [play(1, "alice"), play(2, "alice")]
    episodes = await client.post("/api/2/episodes/alice.json", json=mine, headers=basic())
    assert (await episodes.json())["timestamp"] == 2 * 2 + 1


@pytest.mark.parametrize("db_engine", ["postgresql"], indirect=True)
async def test_writers_of_different_users_never_wait_for_each_other(
    config: Config, create_user: Any
) -> None:
    alice = (await create_user("alice")).id
    bob = (await create_user("bob")).id
    db = create_engine(config.database)
    await db.open()
    held, release = asyncio.Event(), asyncio.Event()

    async def alices_write() -> None:
        """A write of alice's that has taken her change numbers and stays open."""
        now = timestamps.now_us()
        url = "https://alice.example/held.xml"
        entity = Subscription(None, alice, new_uuid7(), derive_guid(url), url, url_key(url),
                              None, now, None, now, None, 0, now)  # fmt: skip
        async with db.write(user=alice) as conn:
            await meta.lock_user(conn, alice)
            await subscriptions.save(conn, [entity], [], [], now)
            held.set()
            await release.wait()

    writer = asyncio.create_task(alices_write())
    try:
        await asyncio.wait_for(held.wait(), 10)
        sync = SyncService(db, config.sync)
        episodes = EpisodeWrites(db, UploadBounds(config.gpodder))
        bobs = sync.apply(bob, None, [Subscribe(feed_url="https://bob.example/feed.xml")])
        outcome = await asyncio.wait_for(bobs, 5)  # waits on nothing of alice's
        assert [r.status for r in outcome.results] == ["applied"]
        upload = await asyncio.wait_for(episodes.upload(bob, [play(1, "bob")]), 5)
        assert upload.stored == 1
        assert not writer.done()  # alice's transaction was open all along
    finally:
        release.set()
        await writer
        await db.close()
