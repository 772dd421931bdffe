"""Contract section 6: POST /api/v1/sync, the batch rules."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync.feeds import derive_guid
from tests.conftest import bearer, login
from tests.support.sync_helpers import action, all_subscriptions, get_json, post_batch

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]
FEED = "https://example.com/feed.xml"


def statuses(body: dict[str, Any]) -> list[str]:
    return [r["status"] for r in body["results"]]


# --- envelope: a 400 for the whole batch, nothing applied ---------------------------


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "request body must be a JSON object"),
        ({}, "requests must be an array"),
        ({"requests": {}}, "requests must be an array"),
        ({"requests": []}, "1 to 30 actions, not 0"),
        ({"requests": [action(feed_url=f"{FEED}{i}") for i in range(31)]}, "not 31"),
        ({"requests": [action(feed_url=FEED), "x"]}, "requests[1] must be an object"),
        ({"requests": [action(feed_url=FEED), action(action_id="nope")]}, "requests[1].action_id"),
        ({"requests": [{**action(feed_url=FEED), "action_id": 5}]}, "requests[0].action_id"),
        ({"requests": [{**action(feed_url=FEED), "type": None}]}, "requests[0].type"),
        ({"requests": [{**action(feed_url=FEED), "action": 1}]}, "requests[0].action"),
        ({"requests": [{**action(feed_url=FEED), "occurred_at": 17}]}, "requests[0].occurred_at"),
        ({"requests": [{**action(feed_url=FEED), "data": []}]}, "requests[0].data"),
        ({"requests": [{**action(feed_url=FEED), "type": "sub\u0000"}]}, "requests[0].type"),
    ],
)
async def test_envelope_errors_are_400_naming_index_and_field_and_apply_nothing(
    client: Client, alice: str, payload: Any, message: str
) -> None:
    response = await client.post("/api/v1/sync", json=payload, headers=bearer(alice))
    body = await response.json()
    assert response.status == 400
    assert body["error"] == "Bad request"
    assert message in body["description"]
    assert await all_subscriptions(client, alice) == []


async def test_wrong_content_type_and_bad_client_id_are_400(client: Client, alice: str) -> None:
    response = await client.post(
        "/api/v1/sync", data=b'{"requests": []}', headers={**bearer(alice)}
    )
    assert response.status == 400
    body = {"requests": [action(feed_url=FEED)]}
    response = await client.post(
        "/api/v1/sync", json=body, headers={**bearer(alice), "Client-ID": "not-a-uuid"}
    )
    assert response.status == 400
    assert "Client-ID" in (await response.json())["description"]
    assert await all_subscriptions(client, alice) == []


async def test_sync_needs_a_token(client: Client) -> None:
    response = await client.post("/api/v1/sync", json={"requests": [action(feed_url=FEED)]})
    assert response.status == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


# --- per-action validation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (action(type_="episode", feed_url=FEED), "unknown type"),
        (action("play", feed_url=FEED), "unknown action"),
        (action(occurred_at="2026-01-01T00:00:00", feed_url=FEED), "occurred_at"),
        (action(occurred_at="2026-01-01T00:00:60Z", feed_url=FEED), "occurred_at"),
        (action(occurred_at="yesterday", feed_url=FEED), "occurred_at"),
        (action(feed_url="ftp://example.com/feed"), "http or https"),
        (action(feed_url="/relative/feed"), "http or https"),
        (action(feed_url="https://"), "no host"),
        (action(feed_url="https://example.com/" + "a" * 2048), "longer than 2048"),
        (action(feed_url="https://example.com/\u0007"), "control character"),
        (action(feed_url=FEED, guid="g" * 513), "longer than 512"),
        (action(feed_url=FEED, guid=12), "data.guid must be a string"),
        (action(feed_url=["x"]), "data.feed_url must be a string"),
        (action(), "feed_url is required"),
        (action("update", feed_url=FEED), "sync_id is required"),
        (action("update", sync_id=str(uuid.uuid4())), "needs data.guid or data.feed_url"),
        (action("unsubscribe"), "needs data.sync_id"),
    ],
)
async def test_invalid_actions_are_rejected_with_a_reason_and_the_rest_still_run(
    client: Client, alice: str, bad: dict[str, Any], reason: str
) -> None:
    good = action(feed_url="https://good.example/rss")
    body = await post_batch(client, alice, [bad, good])
    rejected, applied = body["results"]
    assert rejected["status"] == "rejected"
    assert reason in rejected["reason"]
    assert rejected["data"] == bad["data"]  # no entity: the submitted data is echoed
    assert rejected["action_id"] == bad["action_id"]
    assert applied["status"] == "applied"
    assert [s["feed_url"] for s in await all_subscriptions(client, alice)] == [
        "https://good.example/rss"
    ]


async def test_lone_surrogate_in_data_is_rejected_not_a_500(client: Client, alice: str) -> None:
    template = (
        '{"requests": [{"action_id": "ID", "type": "subscription", "action": "subscribe", '
        '"occurred_at": "2026-01-01T00:00:00Z", "data": {"feed_url": "https://x.example/\\ud800"}}]}'
    )
    raw = template.replace("ID", str(uuid.uuid4()))
    response = await client.post(
        "/api/v1/sync",
        data=raw.encode(),
        headers={**bearer(alice), "Content-Type": "application/json"},
    )
    assert response.status == 200
    assert (await response.json())["results"][0]["status"] == "rejected"


async def test_occurred_at_too_far_in_the_future_is_rejected(client: Client, alice: str) -> None:
    now = datetime.now(UTC)
    far = (now + timedelta(seconds=400)).isoformat().replace("+00:00", "Z")
    near = (now + timedelta(seconds=200)).isoformat().replace("+00:00", "Z")
    body = await post_batch(
        client,
        alice,
        [action(occurred_at=far, feed_url=FEED), action(occurred_at=near, feed_url=FEED + "2")],
    )
    assert statuses(body) == ["rejected", "applied"]
    assert "future" in body["results"][0]["reason"]


# --- subscribe, matching, guid -----------------------------------------------------------


async def test_subscribe_creates_with_uuid_sync_id_derived_guid_and_time(
    client: Client, alice: str
) -> None:
    body = await post_batch(
        client,
        alice,
        [action(occurred_at="2026-07-11T15:30:00.123456789+02:00", feed_url=FEED, guid=None)],
    )
    data = body["results"][0]["data"]
    assert uuid.UUID(data["sync_id"]).version == 7  # time-ordered (RFC 9562)
    assert data["guid"] == derive_guid(FEED)
    assert data["feed_url"] == FEED
    assert data["subscribed_at"] == "2026-07-11T13:30:00.123456Z"
    assert "unsubscribed_at" not in data
    assert derive_guid("https://mp3s.nashownotes.com/pc20rss.xml") == (
        "917393e3-1b1e-5cef-ace4-edaa54e1f810"
    )


async def test_given_guid_is_kept_and_empty_guid_is_derived(client: Client, alice: str) -> None:
    body = await post_batch(
        client, alice, [action(feed_url=FEED, guid="my-guid"), action(feed_url=FEED + "b", guid="")]
    )
    assert body["results"][0]["data"]["guid"] == "my-guid"
    assert body["results"][1]["data"]["guid"] == derive_guid(FEED + "b")


async def test_scheme_case_and_trailing_slash_variants_land_on_one_subscription(
    client: Client, alice: str
) -> None:
    variants = [
        "https://Example.com/feed/",
        "http://example.com/feed",
        "HTTPS://EXAMPLE.COM/feed//",
        "https://example.com/feed#top",
    ]
    actions = [
        action(occurred_at=f"2026-01-01T00:00:0{i}Z", feed_url=url)
        for i, url in enumerate(variants)
    ]
    body = await post_batch(client, alice, actions)
    assert statuses(body) == ["applied", "ignored", "ignored", "ignored"]
    assert len({r["data"]["sync_id"] for r in body["results"]}) == 1
    subs = await all_subscriptions(client, alice)
    assert [s["feed_url"] for s in subs] == ["https://Example.com/feed/"]
    # A path that differs in case is another feed: only the host is case-insensitive.
    body = await post_batch(client, alice, [action(feed_url="https://example.com/FEED")])
    assert statuses(body) == ["applied"]


async def test_subscribe_matches_by_guid_and_never_changes_url_or_guid(
    client: Client, alice: str
) -> None:
    first = await post_batch(client, alice, [action(feed_url=FEED, guid="shared-guid")])
    entity = first["results"][0]["data"]
    body = await post_batch(
        client,
        alice,
        [
            action(
                occurred_at="2026-02-01T00:00:00Z",
                feed_url="https://moved.example/rss",
                guid="shared-guid",
            )
        ],
    )
    result = body["results"][0]
    assert result["status"] == "ignored"
    assert result["data"] == entity


async def test_subscribe_with_unknown_sync_id_is_treated_as_absent(
    client: Client, alice: str
) -> None:
    body = await post_batch(client, alice, [action(feed_url=FEED, sync_id=str(uuid.uuid4()))])
    assert statuses(body) == ["applied"]
    assert len(await all_subscriptions(client, alice)) == 1


# --- ordering and last-write-wins ----------------------------------------------------


async def test_batch_is_applied_in_time_order_not_array_order(client: Client, alice: str) -> None:
    created = await post_batch(
        client, alice, [action(occurred_at="2026-01-01T00:00:00Z", feed_url=FEED)]
    )
    sync_id = created["results"][0]["data"]["sync_id"]
    body = await post_batch(
        client,
        alice,
        [
            # Array order says "resubscribe, then unsubscribe"; time says the opposite.
            action(occurred_at="2026-01-03T00:00:00Z", feed_url=FEED),
            action("unsubscribe", occurred_at="2026-01-02T00:00:00Z", sync_id=sync_id),
        ],
    )
    assert statuses(body) == ["applied", "applied"]
    final = body["results"][0]["data"]
    assert final["subscribed_at"] == "2026-01-03T00:00:00Z"
    assert "unsubscribed_at" not in final
    # Both results show the state after the whole batch.
    assert body["results"][1]["data"] == final


async def test_ties_in_time_follow_array_order(client: Client, alice: str) -> None:
    created = await post_batch(
        client, alice, [action(occurred_at="2026-01-01T00:00:00Z", feed_url=FEED)]
    )
    sync_id = created["results"][0]["data"]["sync_id"]
    moment = "2026-01-02T00:00:00Z"
    body = await post_batch(
        client,
        alice,
        [
            action("unsubscribe", occurred_at=moment, sync_id=sync_id),
            action(occurred_at=moment, feed_url=FEED),
        ],
    )
    # The unsubscribe wins the tie by array order; the subscribe is then not later.
    assert statuses(body) == ["applied", "ignored"]
    assert body["results"][1]["data"]["unsubscribed_at"] == "2026-01-02T00:00:00Z"


async def test_last_write_wins_is_strict(client: Client, alice: str) -> None:
    created = await post_batch(
        client, alice, [action(occurred_at="2026-01-05T00:00:00Z", feed_url=FEED)]
    )
    sync_id = created["results"][0]["data"]["sync_id"]
    body = await post_batch(
        client,
        alice,
        [
            action("unsubscribe", occurred_at="2026-01-04T00:00:00Z", sync_id=sync_id),
            action("unsubscribe", occurred_at="2026-01-05T00:00:00Z", sync_id=sync_id),
        ],
    )
    assert statuses(body) == ["ignored", "ignored"]
    assert "unsubscribed_at" not in body["results"][0]["data"]
    body = await post_batch(
        client,
        alice,
        [action("unsubscribe", occurred_at="2026-01-05T00:00:00.000001Z", sync_id=sync_id)],
    )
    assert statuses(body) == ["applied"]
    # Resubscribing needs a time after the unsubscribe.
    stale = await post_batch(
        client, alice, [action(occurred_at="2026-01-05T00:00:00Z", feed_url=FEED)]
    )
    assert statuses(stale) == ["ignored"]
    fresh = await post_batch(
        client, alice, [action(occurred_at="2026-01-06T00:00:00Z", feed_url=FEED)]
    )
    assert statuses(fresh) == ["applied"]
    assert fresh["results"][0]["data"]["subscribed_at"] == "2026-01-06T00:00:00Z"
    assert fresh["results"][0]["data"]["sync_id"] == sync_id


# --- unsubscribe and update -----------------------------------------------------------


async def test_unsubscribe_rules(client: Client, alice: str) -> None:
    missing = await post_batch(client, alice, [action("unsubscribe", sync_id=str(uuid.uuid4()))])
    assert missing["results"][0]["status"] == "rejected"
    assert missing["results"][0]["reason"] == "Entity not found"
    await post_batch(client, alice, [action(occurred_at="2026-01-01T00:00:00Z", feed_url=FEED)])
    by_url = await post_batch(
        client,
        alice,
        [
            action(
                "unsubscribe",
                occurred_at="2026-01-02T00:00:00Z",
                feed_url="http://example.com/feed.xml/",
            )
        ],
    )
    assert statuses(by_url) == ["applied"]
    again = await post_batch(
        client, alice, [action("unsubscribe", occurred_at="2026-01-03T00:00:00Z", feed_url=FEED)]
    )
    assert statuses(again) == ["ignored"]
    assert again["results"][0]["data"]["unsubscribed_at"] == "2026-01-02T00:00:00Z"
    # Entities are never deleted by the API: still listed with include_unsubscribed.
    assert len(await all_subscriptions(client, alice, include_unsubscribed=True)) == 1
    assert await all_subscriptions(client, alice, include_unsubscribed=False) == []


async def test_unsubscribe_by_guid(client: Client, alice: str) -> None:
    await post_batch(client, alice, [action(feed_url=FEED, guid="the-guid")])
    body = await post_batch(
        client, alice, [action("unsubscribe", occurred_at="2026-02-01T00:00:00Z", guid="the-guid")]
    )
    assert statuses(body) == ["applied"]


async def test_update_rules(client: Client, alice: str) -> None:
    created = await post_batch(
        client,
        alice,
        [action(feed_url=FEED), action(feed_url="https://other.example/rss")],
    )
    first, second = (r["data"]["sync_id"] for r in created["results"])
    moved = await post_batch(
        client,
        alice,
        [
            action(
                "update",
                occurred_at="2026-01-02T00:00:00Z",
                sync_id=first,
                feed_url="https://new.example/rss",
                guid="new-guid",
            )
        ],
    )
    assert statuses(moved) == ["applied"]
    assert moved["results"][0]["data"]["feed_url"] == "https://new.example/rss"
    assert moved["results"][0]["data"]["guid"] == "new-guid"
    clash = await post_batch(
        client,
        alice,
        [
            action(
                "update",
                occurred_at="2026-01-03T00:00:00Z",
                sync_id=first,
                feed_url="http://other.example/rss/",
            )
        ],
    )
    assert clash["results"][0]["status"] == "rejected"
    assert second in clash["results"][0]["reason"]
    stale = await post_batch(
        client,
        alice,
        [action("update", occurred_at="2026-01-01T12:00:00Z", sync_id=first, guid="old")],
    )
    assert statuses(stale) == ["ignored"]
    unknown = await post_batch(
        client, alice, [action("update", sync_id=str(uuid.uuid4()), guid="x")]
    )
    assert unknown["results"][0]["reason"] == "Entity not found"
    # Two entities may share a guid.
    shared = await post_batch(
        client,
        alice,
        [action("update", occurred_at="2026-01-04T00:00:00Z", sync_id=second, guid="new-guid")],
    )
    assert statuses(shared) == ["applied"]
    # The old url is free again once the entity moved away from it.
    reuse = await post_batch(
        client, alice, [action(occurred_at="2026-01-05T00:00:00Z", feed_url=FEED, guid="fresh")]
    )
    assert statuses(reuse) == ["applied"]
    assert reuse["results"][0]["data"]["sync_id"] not in (first, second)


async def test_update_of_an_unsubscribed_entity_and_url_swap_in_one_batch(
    client: Client, alice: str
) -> None:
    created = await post_batch(
        client,
        alice,
        [action(feed_url="https://a.example/rss"), action(feed_url="https://b.example/rss")],
    )
    a, b = (r["data"]["sync_id"] for r in created["results"])
    await post_batch(
        client, alice, [action("unsubscribe", occurred_at="2026-01-02T00:00:00Z", sync_id=a)]
    )
    body = await post_batch(
        client,
        alice,
        [
            action(
                "update",
                occurred_at="2026-01-03T00:00:00Z",
                sync_id=a,
                feed_url="https://c.example/rss",
            ),
            action(
                "update",
                occurred_at="2026-01-04T00:00:00Z",
                sync_id=b,
                feed_url="https://a.example/rss",
            ),
            action(
                "update",
                occurred_at="2026-01-05T00:00:00Z",
                sync_id=a,
                feed_url="https://b.example/rss",
            ),
        ],
    )
    assert statuses(body) == ["applied", "applied", "applied"]
    entity_a = await get_json(client, alice, f"/api/v1/subscriptions/{a}")
    entity_b = await get_json(client, alice, f"/api/v1/subscriptions/{b}")
    assert entity_a["feed_url"] == "https://b.example/rss"
    assert "unsubscribed_at" in entity_a
    assert entity_b["feed_url"] == "https://a.example/rss"


# --- idempotency ----------------------------------------------------------------------


async def test_a_replayed_batch_answers_exactly_as_the_first_time(
    client: Client, alice: str
) -> None:
    batch = [
        action(occurred_at="2026-01-01T00:00:00Z", feed_url=FEED),
        action(occurred_at="2026-01-01T00:00:01Z", feed_url="http://example.com/feed.xml"),
        action(type_="episode", feed_url=FEED),
        action("unsubscribe", sync_id=str(uuid.uuid4())),
    ]
    first = await post_batch(client, alice, batch)
    second = await post_batch(client, alice, batch)
    assert second == first
    assert statuses(first) == ["applied", "ignored", "rejected", "rejected"]
    assert len(await all_subscriptions(client, alice)) == 1


async def test_a_replayed_action_is_not_applied_again_but_shows_current_state(
    client: Client, alice: str
) -> None:
    subscribe = action(occurred_at="2026-01-01T00:00:00Z", feed_url=FEED)
    first = await post_batch(client, alice, [subscribe])
    sync_id = first["results"][0]["data"]["sync_id"]
    unsubscribe = action("unsubscribe", occurred_at="2026-01-02T00:00:00Z", sync_id=sync_id)
    await post_batch(client, alice, [unsubscribe])
    # An identical resend repeats the first status, with the entity as it is now.
    body = await post_batch(client, alice, [subscribe])
    assert body["results"][0]["status"] == "applied"
    assert body["results"][0]["data"]["unsubscribed_at"] == "2026-01-02T00:00:00Z"


async def test_an_action_id_reused_for_a_different_action_is_rejected(
    client: Client, alice: str
) -> None:
    """Revision 2: the old code answered the first status (`applied`) and silently did
    nothing; an action_id names one action, so anything else under it is refused."""
    subscribe = action(occurred_at="2026-01-01T00:00:00Z", feed_url=FEED)
    first = await post_batch(client, alice, [subscribe])
    sync_id = first["results"][0]["data"]["sync_id"]
    await post_batch(
        client, alice, [action("unsubscribe", occurred_at="2026-01-02T00:00:00Z", sync_id=sync_id)]
    )
    for changed in (
        {**subscribe, "occurred_at": "2026-01-03T00:00:00Z"},  # another time
        {**subscribe, "data": {"feed_url": "https://other.example/rss"}},  # another feed
        {**subscribe, "action": "unsubscribe"},  # another action
    ):
        body = await post_batch(client, alice, [changed])
        [result] = body["results"]
        assert result["status"] == "rejected"
        assert result["reason"] == "action_id already used for a different action"
        assert result["data"] == changed["data"]  # no entity: the submitted data
    # Nothing ran: the one entity is still unsubscribed, and no other feed exists.
    [entity] = await all_subscriptions(client, alice, include_unsubscribed=True)
    assert entity["unsubscribed_at"] == "2026-01-02T00:00:00Z"
    # Key order and white space in data do not make an action different.
    reordered = {**subscribe, "data": {"guid": None, "feed_url": FEED}}
    reordered["data"].pop("guid")
    assert statuses(await post_batch(client, alice, [reordered])) == ["applied"]


async def test_duplicate_action_id_within_a_batch_is_processed_once(
    client: Client, alice: str
) -> None:
    same = str(uuid.uuid4())
    first = action(action_id=same, feed_url=FEED)
    body = await post_batch(client, alice, [first, {**first, "action_id": same.upper()}])
    assert statuses(body) == ["applied", "applied"]
    assert body["results"][0]["data"] == body["results"][1]["data"]
    assert len(await all_subscriptions(client, alice)) == 1
    assert body["results"][1]["action_id"] == same.upper()  # echoed as sent


async def test_one_action_id_on_two_different_actions_in_a_batch_rejects_the_second(
    client: Client, alice: str
) -> None:
    """Revision 2: the old code reported the second `applied` and never ran it."""
    same = str(uuid.uuid4())
    body = await post_batch(
        client,
        alice,
        [
            action(action_id=same, feed_url=FEED),
            action(action_id=same.upper(), feed_url="https://other.example/rss"),
        ],
    )
    assert statuses(body) == ["applied", "rejected"]
    assert body["results"][1]["reason"] == "action_id already used for a different action"
    assert body["results"][1]["data"] == {"feed_url": "https://other.example/rss"}
    assert [s["feed_url"] for s in await all_subscriptions(client, alice)] == [FEED]


async def test_rejected_actions_are_recorded_too(client: Client, alice: str) -> None:
    bad = action(feed_url="not a url")
    first = await post_batch(client, alice, [bad])
    again = await post_batch(client, alice, [bad])
    assert statuses(again) == ["rejected"]
    assert again["results"][0]["reason"] == first["results"][0]["reason"]
    fixed = {**bad, "data": {"feed_url": FEED}}  # same id: a correction needs a new id
    second = await post_batch(client, alice, [fixed])
    assert statuses(second) == ["rejected"]
    assert second["results"][0]["reason"] == "action_id already used for a different action"
    assert await all_subscriptions(client, alice) == []


# --- users are isolated -----------------------------------------------------------------


async def test_one_user_never_sees_or_touches_another_users_data(
    client: Client, alice: str, create_user: Any
) -> None:
    await create_user("bob")
    bob = (await login(client, "bob"))["access_token"]
    shared_id = str(uuid.uuid4())
    alices = await post_batch(client, alice, [action(action_id=shared_id, feed_url=FEED)])
    sync_id = alices["results"][0]["data"]["sync_id"]
    # Bob's action with the same action_id is his own: applied, not a replay of Alice's.
    bobs = await post_batch(client, bob, [action(action_id=shared_id, feed_url=FEED)])
    assert statuses(bobs) == ["applied"]
    assert bobs["results"][0]["data"]["sync_id"] != sync_id
    await get_json(client, bob, f"/api/v1/subscriptions/{sync_id}", expect=404)
    attack = await post_batch(
        client, bob, [action("unsubscribe", occurred_at="2026-03-01T00:00:00Z", sync_id=sync_id)]
    )
    assert attack["results"][0]["reason"] == "Entity not found"
    attack = await post_batch(
        client,
        bob,
        [action("update", occurred_at="2026-03-01T00:00:00Z", sync_id=sync_id, guid="mine")],
    )
    assert attack["results"][0]["reason"] == "Entity not found"
    alice_view = await get_json(client, alice, f"/api/v1/subscriptions/{sync_id}")
    assert "unsubscribed_at" not in alice_view
    assert alice_view["guid"] == derive_guid(FEED)
    assert len(await all_subscriptions(client, bob)) == 1
