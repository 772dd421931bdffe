"""New entities get time-ordered UUIDv7 sync ids; the UUIDv4 ids an earlier release
issued stay valid beside them, for every rule that finds an entity by its sync_id."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync import feeds, rules
from tests.support.sync_helpers import action, all_subscriptions, get_json, post_batch

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]
OLD_FEED = "https://old.example.com/feed.xml"
NEW_FEED = "https://new.example.com/feed.xml"


async def test_ids_of_an_earlier_release_work_beside_new_ones(
    client: Client, alice: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The release before made random UUIDv4 ids: make one entity that way.
    with monkeypatch.context() as patch:
        patch.setattr(rules, "new_uuid7", lambda: str(uuid.uuid4()))
        # A batch's ids are made before its write turn, all at once.
        patch.setattr(feeds, "new_uuid7s", lambda n: [str(uuid.uuid4()) for _ in range(n)])
        body = await post_batch(client, alice, [action(feed_url=OLD_FEED)])
    old_id = body["results"][0]["data"]["sync_id"]
    body = await post_batch(client, alice, [action(feed_url=NEW_FEED)])
    new_id = body["results"][0]["data"]["sync_id"]
    assert uuid.UUID(old_id).version == 4
    assert uuid.UUID(new_id).version == 7

    later = "2026-02-01T00:00:00Z"
    body = await post_batch(
        client,
        alice,
        [
            action("unsubscribe", occurred_at=later, sync_id=old_id.upper()),
            action("update", occurred_at=later, sync_id=new_id, guid="moved-guid"),
        ],
    )
    assert [r["status"] for r in body["results"]] == ["applied", "applied"]
    # A subscribe naming the old id (and another URL) finds that entity, not a new one.
    body = await post_batch(
        client,
        alice,
        [
            action(
                occurred_at="2026-03-01T00:00:00Z",
                sync_id=old_id,
                feed_url="https://elsewhere.example.com/x.xml",
            )
        ],
    )
    result = body["results"][0]
    assert result["status"] == "applied"
    assert result["data"]["sync_id"] == old_id
    assert result["data"]["feed_url"] == OLD_FEED

    listed = {s["sync_id"]: s for s in await all_subscriptions(client, alice)}
    assert set(listed) == {old_id, new_id}
    assert listed[new_id]["guid"] == "moved-guid"
    changes = await get_json(client, alice, "/api/v1/sync?limit=50")
    assert {c["data"]["sync_id"] for c in changes["results"]} == {old_id, new_id}


async def test_entities_made_later_have_later_ids(client: Client, alice: str) -> None:
    made: list[str] = []
    for batch in range(3):
        body = await post_batch(
            client,
            alice,
            [action(feed_url=f"https://f{batch}-{i}.example.com/rss") for i in range(10)],
        )
        ids = [r["data"]["sync_id"] for r in body["results"]]
        assert all(uuid.UUID(i).version == 7 for i in ids)
        made.append(min(ids))
        made.append(max(ids))
    # Each batch's ids sort after every id of the batches before it.
    assert made == sorted(made)
