"""A batch is one transaction: a failure applies nothing; ids expire after retention."""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.config import Config
from podsync.rules import Subscribe, Unsubscribe
from podsync.services.sync import ActionKey, SyncService
from podsync.storage.sqlite import Database
from tests.conftest import bearer
from tests.support.sync_helpers import action, all_subscriptions, post_batch

DAY_US = 86_400_000_000


async def test_a_failing_batch_answers_500_and_applies_nothing(
    client: TestClient[Any, Any], alice: str, config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    await post_batch(client, alice, [action(feed_url="https://kept.example/rss")])
    # Make the database refuse one row, as a full disk or a bug would, mid-batch.
    with sqlite3.connect(config.database.path) as conn:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON subscriptions "
            "WHEN NEW.feed_url = 'https://boom.example/rss' "
            "BEGIN SELECT RAISE(ABORT, 'refused by test'); END"
        )
    batch = [
        action(occurred_at="2026-01-02T00:00:00Z", feed_url="https://first.example/rss"),
        action(
            "unsubscribe", occurred_at="2026-01-03T00:00:00Z", feed_url="https://kept.example/rss"
        ),
        action(occurred_at="2026-01-04T00:00:00Z", feed_url="https://boom.example/rss"),
    ]
    with caplog.at_level(logging.ERROR):
        response = await client.post(
            "/api/v1/sync", json={"requests": batch}, headers=bearer(alice)
        )
    body = await response.json()
    assert response.status == 500
    assert body["error"] == "Internal server error"
    assert "refused by test" not in body["description"]
    request_id = response.headers["X-Request-ID"]
    assert any(request_id in r.getMessage() for r in caplog.records)
    subs = await all_subscriptions(client, alice)
    assert [(s["feed_url"], "unsubscribed_at" in s) for s in subs] == [
        ("https://kept.example/rss", False)
    ]
    # Nothing was recorded either: once the cause is gone, the same batch applies.
    with sqlite3.connect(config.database.path) as conn:
        conn.execute("DROP TRIGGER refuse")
    retry = await post_batch(client, alice, batch)
    assert [r["status"] for r in retry["results"]] == ["applied", "applied", "applied"]


async def test_action_ids_are_forgotten_after_the_retention(
    config: Config, create_user: Any
) -> None:
    user = await create_user("carol")
    async with Database(config.database.path) as db:
        sync = SyncService(db, config.sync)
        now = timestamps.now_us()
        subscribe = Subscribe("https://a.example/", now - DAY_US)
        unsubscribe = Unsubscribe(now, feed_url="https://a.example/")
        first = ActionKey("0d5b7f3c-1d7e-4b8a-9c55-6f1e2d3c4b5a", "subscribe")
        second = ActionKey("1d5b7f3c-1d7e-4b8a-9c55-6f1e2d3c4b5a", "unsubscribe")

        async def status(command: Any, key: ActionKey, at: int) -> str:
            outcome = await sync.apply(user.id, None, [command], keys=[key], now=at)
            return outcome.results[0].status

        assert await status(subscribe, first, now) == "applied"
        assert await status(unsubscribe, second, now) == "applied"
        # Within the retention, a replay repeats its first result...
        later = now + 89 * DAY_US
        assert await status(unsubscribe, second, later) == "applied"
        # ...after it, the id is judged by last-write-wins alone (already unsubscribed).
        past = now + 91 * DAY_US
        assert (await sync.prune_action_log(past)) == 2
        assert await status(unsubscribe, second, past) == "ignored"
