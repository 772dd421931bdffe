"""Contract section 12 (rev. 2): GET /metrics in Prometheus text format, only with
server.metrics = true, never carrying usernames, URLs or tokens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from podsync.web.app import create_app
from tests.conftest import PASSWORD, MakeConfig, bearer
from tests.support.sync_helpers import action, post_batch

FEED = "https://secret-feed.example.org/podcast.xml"


def samples(text: str) -> Iterator[Sample]:
    for family in text_string_to_metric_families(text):
        yield from family.samples


def value(text: str, name: str, **labels: str) -> float:
    found = [s.value for s in samples(text) if s.name == name and s.labels == labels]
    assert len(found) == 1, (name, labels, found)
    return found[0]


async def test_metrics_are_off_by_default(aiohttp_client: Any, make_config: MakeConfig) -> None:
    client = await aiohttp_client(create_app(make_config()))
    response = await client.get("/metrics")
    assert response.status == 404
    body = await response.json()
    assert body["error"] == "Not found"
    assert "server.metrics" in body["description"]


async def test_metrics_count_requests_actions_logins_commits_and_users(
    aiohttp_client: Any, make_config: MakeConfig, create_user: Any
) -> None:
    client = await aiohttp_client(create_app(make_config(server={"metrics": True})))
    await create_user("alice")
    await create_user("bob")
    wrong = await client.post("/auth/login", json={"username": "alice", "password": "nope-nope"})
    assert wrong.status == 401
    login = await client.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    token = (await login.json())["access_token"]
    batch = await post_batch(
        client,
        token,
        [
            action(feed_url=FEED),
            action(feed_url=FEED + "?2"),
            action(feed_url="not a url"),
        ],
    )
    statuses = [r["status"] for r in batch["results"]]
    sync_id = batch["results"][0]["data"]["sync_id"]
    assert (await client.get(f"/api/v1/subscriptions/{sync_id}", headers=bearer(token))).ok
    assert (await client.get("/no/such/path/alice")).status == 404

    response = await client.get("/metrics")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=")
    text = await response.text()

    requests = "podsync_http_requests_total"
    assert value(text, requests, route="/auth/login", method="POST", status="401") == 1
    assert value(text, requests, route="/auth/login", method="POST", status="200") == 1
    assert value(text, requests, route="/api/v1/sync", method="POST", status="200") == 1
    # The route template, not the path with its sync_id.
    template = "/api/v1/subscriptions/{sync_id}"
    assert value(text, requests, route=template, method="GET", status="200") == 1
    assert value(text, requests, route="unmatched", method="GET", status="404") == 1
    assert (
        value(
            text,
            "podsync_http_request_duration_seconds_count",
            route="/api/v1/sync",
            method="POST",
        )
        == 1
    )
    assert value(text, "podsync_logins_total", outcome="failure") == 1
    assert value(text, "podsync_logins_total", outcome="success") == 1
    for status in set(statuses):
        assert value(text, "podsync_sync_actions_total", status=status) == statuses.count(status)
    assert value(text, "podsync_users", state="enabled") == 2
    assert value(text, "podsync_users", state="disabled") == 0
    assert value(text, "podsync_subscriptions") == 2
    assert value(text, "podsync_db_commits_total") >= 1
    # Nothing that names a person, a feed or a credential.
    for secret in ("alice", "bob", "secret-feed", sync_id, token, PASSWORD, "/no/such"):
        assert secret not in text


async def test_the_commit_counter_follows_the_database(
    aiohttp_client: Any, make_config: MakeConfig, create_user: Any
) -> None:
    client = await aiohttp_client(create_app(make_config(server={"metrics": True})))
    await create_user("alice")
    login = await client.post("/auth/login", json={"username": "alice", "password": PASSWORD})
    token = (await login.json())["access_token"]
    before = value(await (await client.get("/metrics")).text(), "podsync_db_commits_total")
    for n in range(3):
        await post_batch(client, token, [action(feed_url=f"{FEED}?{n}")])
    after = value(await (await client.get("/metrics")).text(), "podsync_db_commits_total")
    assert after - before == 3
