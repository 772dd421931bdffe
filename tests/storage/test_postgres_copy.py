"""`podsync db copy-to URL`: an instance moves from SQLite to PostgreSQL and its
users notice nothing (contract section 13): the same passwords, tokens that stay
valid, byte-identical listings and feeds, action ids still remembered."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
from aiohttp.test_utils import TestClient

from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig, bearer, login, run_cli, with_accounts
from tests.support.gpodder_support import basic
from tests.support.pg_cluster import Cluster
from tests.support.sync_helpers import action, post_batch

PAGES = (
    "/api/v1/subscriptions?limit=3",
    "/api/v1/subscriptions?limit=500&include_unsubscribed=true",
    "/api/v1/sync?include_own=true",
    "/api/v1/sync?limit=2",
)
REPLAYED = "0b5e8c1a-6a55-4b8e-9d43-3f5b0b8f7a11"
# The gpodder layer's reads: devices, episode actions, and the subscription stream
# (whose "remove" lists the URL an update moved a feed away from: an alias row).
GPODDER_PAGES = (
    "/api/2/devices/alice.json",
    "/api/2/episodes/alice.json?since=0",
    "/api/2/subscriptions/alice/phone.json?since=0",
    "/api/2/subscriptions/alice/phone.json?since=1",
)


async def _answers(client: TestClient[Any, Any], token: str) -> list[tuple[int, str]]:
    """Every page in PAGES, and the pages their cursors lead to, as raw text."""
    answers = []
    for url in PAGES + GPODDER_PAGES:
        auth = basic() if url.startswith("/api/2/") else bearer(token)
        response = await client.get(url, headers=auth)
        text = await response.text()
        answers.append((response.status, text))
        body = await response.json()
        if url.startswith("/api/2/"):
            continue
        follow = body.get("next_cursor") or body.get("next_since")
        if follow:
            again = await client.get(follow, headers=bearer(token))
            answers.append((again.status, await again.text()))
    return answers


async def _analysed(url: str) -> set[str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT relname FROM pg_class "
            "WHERE relnamespace = current_schema()::regnamespace AND reltuples > 0"
        )
    finally:
        await conn.close()
    return {str(r[0]) for r in rows}


async def test_copy_to_moves_everything_and_clients_notice_nothing(
    aiohttp_client: Any, make_config: MakeConfig, pg_cluster: Cluster
) -> None:
    sqlite_config = make_config(auth={"access_token_lifetime": 3600})
    await with_accounts(sqlite_config, lambda a: a.add_user("alice", PASSWORD))
    await with_accounts(sqlite_config, lambda a: a.add_user("bob", PASSWORD))
    before = await aiohttp_client(create_app(sqlite_config))
    tokens = await login(before, "alice")
    alice = tokens["access_token"]
    first = await post_batch(
        before,
        alice,
        [action(feed_url=f"https://{i}.example/rss", title=f"Show {i}") for i in range(7)]
        + [action(feed_url="https://replayed.example/rss", action_id=REPLAYED)],
        client_id="11111111-1111-4111-8111-111111111111",
    )
    gone = first["results"][2]["data"]["sync_id"]
    await post_batch(
        before, alice, [action("unsubscribe", occurred_at="2026-02-01T00:00:00Z", sync_id=gone)]
    )
    moved = await post_batch(
        before,
        alice,
        [action("update", occurred_at="2026-01-02T00:00:00Z",
                sync_id=first["results"][0]["data"]["sync_id"],
                feed_url="https://moved.example/rss")],
    )  # fmt: skip
    assert moved["results"][0]["status"] == "applied"
    device = {"caption": "Phone", "type": "mobile"}
    created = await before.post("/api/2/devices/alice/phone.json", json=device, headers=basic())
    assert created.status == 200
    episodes = [
        {"podcast": "https://1.example/rss", "episode": f"https://1.example/{n}.mp3",
         "action": "play", "position": 10 * n, "started": 0, "total": 100, "device": "phone"}
        for n in range(3)
    ]  # fmt: skip
    uploaded = await before.post("/api/2/episodes/alice.json", json=episodes, headers=basic())
    assert uploaded.status == 200
    bob = (await login(before, "bob"))["access_token"]
    await post_batch(before, bob, [action(feed_url="https://bob.example/rss")])
    expected = await _answers(before, alice)
    await before.close()

    url = pg_cluster.new_database()
    copied = await asyncio.to_thread(run_cli, sqlite_config, "db", "copy-to", url)
    assert copied.exit_code == 0, copied.output
    assert "9 subscriptions" in copied.output
    assert "1 gpodder_devices" in copied.output
    assert "3 episode_actions" in copied.output
    assert "1 subscription_url_aliases" in copied.output
    assert "postgres@" in copied.output
    # The copied tables have statistics (an ANALYZE counted their rows): the planner
    # need not wait for autovacuum.
    analysed = await _analysed(url)
    assert {"subscriptions", "actions", "episode_actions", "users"} <= analysed

    after_config = make_config(auth={"access_token_lifetime": 3600}, database={"url": url})
    after = await aiohttp_client(create_app(after_config))
    # The access token issued by the SQLite instance is still good: same secret key,
    # same token generation; and so the listings' cursors agree byte for byte.
    assert await _answers(after, alice) == expected
    refreshed = await after.post("/auth/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert refreshed.status == 200
    assert (await login(after, "alice"))["access_token"]
    # The action id is remembered: the replay gets the first answer, nothing new.
    replay = await post_batch(after, alice, [action(feed_url="https://replayed.example/rss",
                                                    action_id=REPLAYED)])  # fmt: skip
    assert replay["results"][0]["data"]["sync_id"] == first["results"][7]["data"]["sync_id"]
    # New rows get ids after the copied ones (the identity sequences moved on).
    await with_accounts(after_config, lambda a: a.add_user("carol", PASSWORD))
    new = await post_batch(after, alice, [action(feed_url="https://new.example/rss")])
    assert new["results"][0]["status"] == "applied"
    more = [{**episodes[0], "action": "download"}]
    uploaded = await after.post("/api/2/episodes/alice.json", json=more, headers=basic())
    assert uploaded.status == 200, await uploaded.text()
    pulled = await after.get("/api/2/episodes/alice.json?since=0", headers=basic())
    assert len((await pulled.json())["actions"]) == 4
    listed = await asyncio.to_thread(run_cli, after_config, "user", "list")
    assert all(name in listed.output for name in ("alice", "bob", "carol"))

    make_config()  # the config file names the SQLite database again
    again = await asyncio.to_thread(run_cli, sqlite_config, "db", "copy-to", url)
    assert again.exit_code == 1
    assert "empty database" in again.output
