"""The gpodder subscription stream (gpodder spec 5.5, 5.6, 6.1-6.5): the pull by
cursor and the simple API's lists, over the device writes every protocol shares
(`services/device_subscriptions.py`). Reads are the entities changed since the
cursor, each once in its final state, plus `remove old` for URLs an OPA update moved
away from. No HTTP here."""

from __future__ import annotations

import json
from dataclasses import dataclass

from podsync.errors import InvalidInput
from podsync.feeds import url_key
from podsync.services.device_subscriptions import DeviceSubscriptions
from podsync.services.gpodder import cursor
from podsync.store import subscription_stream, subscriptions


@dataclass(frozen=True)
class Changes:
    add: list[str]
    remove: list[str]
    timestamp: int


def parse_url_list(body: bytes, fmt: str) -> list[str]:
    """The list of a simple-API PUT: json (an array of strings) or txt (lines)."""
    if fmt == "txt":
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("the body is not UTF-8") from None
        return [line.strip() for line in text.splitlines() if line.strip()]
    try:
        value = json.loads(body.decode("utf-8")) if body.strip() else []
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidInput("the body must be a JSON array of URLs") from None
    if not isinstance(value, list):
        raise InvalidInput("the body must be a JSON array of URLs")
    return [u for u in value if isinstance(u, str)]


class GpodderSubscriptions(DeviceSubscriptions):
    async def pull(self, user_id: int, since: str | None) -> Changes:
        async with self.db.snapshot() as conn:
            high = await subscriptions.user_seq(conn, user_id)
            threshold = cursor.decode(since, high)
            if threshold == cursor.FULL_STATE:
                # Never tombstones on a full state: AntennaPod and Kasts would delete
                # the local feeds of a first sync.
                add = await subscription_stream.subscribed_urls(conn, user_id)
                return Changes(add, [], cursor.encode(high))
            changed = await subscription_stream.changed_between(conn, user_id, threshold, high)
            moved = await subscription_stream.moved_between(conn, user_id, threshold, high)
        add = [url for url, subscribed in changed if subscribed]
        current = {url_key(u) for u, _ in changed}
        remove = [url for url, subscribed in changed if not subscribed]
        remove += [u for u in dict.fromkeys(moved) if url_key(u) not in current]
        return Changes(add, remove, cursor.encode(high))
