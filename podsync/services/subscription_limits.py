"""What a big gpodder subscription write would leave, checked before it is written.

An upload or list replace of more than one piece is written in several transactions
(so no request holds the event loop or the writer for long); the limits are checked
first, on the whole write, against the user's entities as they are: a write whose
result would pass a limit is refused whole (400) before its first piece. No HTTP and
no database here: the caller reads the entities (`store.subscription_stream.held`).
"""

from __future__ import annotations

from collections.abc import Sequence

from podsync.config import SyncConfig
from podsync.errors import LimitExceeded
from podsync.feeds import derive_guid, url_key
from podsync.services.sync import entity_limit_message, subscription_limit_message
from podsync.store.subscription_stream import HeldFeed


def result_counts(
    held: Sequence[HeldFeed], add: Sequence[str], remove: Sequence[str]
) -> tuple[int, int]:
    """(subscribed feeds, entities) after subscribing `add` and unsubscribing `remove`,
    matching URLs to entities as the sync rules do (url key, then derived guid)."""
    subscribed_by_key = {h.url_key: h.subscribed for h in held}
    key_of_guid = {h.guid: h.url_key for h in held}
    subscribed = sum(1 for h in held if h.subscribed)
    entities = len(held)
    for url in remove:
        key = _match(url, subscribed_by_key, key_of_guid)
        if key is not None and subscribed_by_key[key]:
            subscribed_by_key[key] = False
            subscribed -= 1
    for url in add:
        key = _match(url, subscribed_by_key, key_of_guid)
        if key is None:
            key = url_key(url)
            entities += 1
            subscribed_by_key[key] = False
        if not subscribed_by_key[key]:
            subscribed_by_key[key] = True
            subscribed += 1
    return subscribed, entities


def _match(url: str, by_key: dict[str, bool], key_of_guid: dict[str, str]) -> str | None:
    key = url_key(url)
    if key in by_key:
        return key
    return key_of_guid.get(derive_guid(url))


def check_result(
    config: SyncConfig, held: Sequence[HeldFeed], add: Sequence[str], remove: Sequence[str]
) -> None:
    """LimitExceeded, naming the limit and the count, when the write would pass one."""
    subscribed, entities = result_counts(held, add, remove)
    if entities > config.max_entities_per_user and entities > len(held):
        raise LimitExceeded(entity_limit_message(entities, config.max_entities_per_user))
    now_subscribed = sum(1 for h in held if h.subscribed)
    if subscribed > config.max_subscriptions_per_user and subscribed > now_subscribed:
        raise LimitExceeded(
            subscription_limit_message(subscribed, config.max_subscriptions_per_user)
        )
