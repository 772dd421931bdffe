"""JSON shapes of the entities the API returns."""

from __future__ import annotations

from typing import Any

from podsync import timestamps
from podsync.store.subscriptions import Subscription


def subscription(entity: Subscription) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "sync_id": entity.sync_id,
        "guid": entity.guid,
        "feed_url": entity.feed_url,
        "subscribed_at": timestamps.format(entity.subscribed_at),
    }
    if entity.unsubscribed_at is not None:
        shown["unsubscribed_at"] = timestamps.format(entity.unsubscribed_at)
    return shown
