"""Reading the remote account's subscriptions: the devices it lists, each device's
own list with its removals, or the account's simple list; bounded by what the user
may keep.

- Each device is read once, however often the list of devices names it, and at most
  `gpodder.max_devices_per_user` of them.
- At most `sync.max_subscriptions_per_user` distinct feeds are kept; a list that
  names more stops the reading there (the bound is named).
- A remote that lists no device (oPodSync when the apps never registered one): the
  devices its episode actions name are read instead, each with its removals, and
  only when there are none the simple list. That list names no removal (oPodSync's
  still names the feeds the person unsubscribed), so the removals are then asked of
  a device list by a name no app uses (oPodSync answers any name with the account's
  list; a server that knows no such device refuses it, and nothing is removed): a
  feed removed there is never added.
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from podsync.feeds import MAX_FEED_URL
from podsync.services.remote_import.bounds import ImportBoundReached, ImportBounds
from podsync.services.remote_import.client import RemoteClient, RemoteError
from podsync.services.remote_import.json_stream import Element, Opened
from podsync.services.remote_import.report import RemoteImportReport


class _FeedsBound(Exception):
    """More distinct feeds than may be kept: stop reading this list."""


@dataclass
class FeedLists:
    """The feeds read so far: subscribed on some device, removed on some device."""

    max_feeds: int
    report: RemoteImportReport
    subscribed: dict[str, None] = field(default_factory=dict)
    removed: dict[str, None] = field(default_factory=dict)
    past_bound: bool = False

    def add(self, item: Any) -> None:
        url = _feed_of(item)
        if not isinstance(url, str):
            self.report.skip_feed(_described(item), "not a feed address")
            return
        if len(url) > MAX_FEED_URL:
            self.report.skip_feed(url, f"feed_url is longer than {MAX_FEED_URL} characters")
            return
        if url in self.subscribed:
            return
        if len(self.subscribed) >= self.max_feeds:
            self.past_bound = True
            raise _FeedsBound
        self.subscribed[url] = None

    def remove(self, item: Any) -> None:
        # Only counted (the report's "unsubscribed there"): kept as many as the feeds.
        if (
            isinstance(item, str)
            and item not in self.removed
            and len(self.removed) < self.max_feeds
        ):
            self.removed[item] = None

    def unsubscribed(self) -> int:
        return sum(1 for url in self.removed if url not in self.subscribed)

    def drop_removed(self) -> None:
        """The removals win (a list that names no removal, and one that does)."""
        for url in self.removed:
            self.subscribed.pop(url, None)


async def device_ids(remote: RemoteClient, bounds: ImportBounds) -> tuple[list[str], bool]:
    """The devices the remote lists, each once, at most `max_devices`; and whether it
    lists more."""
    path = remote.devices_path()
    ids: dict[str, None] = {}
    listed = more = False
    async with aclosing(remote.answer(path, {})) as events:
        async for event in events:
            if isinstance(event, Opened) and event.key is None:
                listed = True
            elif isinstance(event, Element) and event.key is None:
                device = event.value.get("id") if isinstance(event.value, dict) else None
                if not isinstance(device, str) or device in ids:
                    continue
                if len(ids) >= bounds.max_devices:
                    more = True
                    break
                ids[device] = None
    if not listed:
        raise RemoteError(remote.name("GET", "/api/2/devices/…"), "not a list of devices")
    return list(ids), more


async def read_device_lists(remote: RemoteClient, ids: list[str], lists: FeedLists) -> None:
    for device in ids:
        await _read_add_remove(remote, remote.device_list_path(device), lists)
        if lists.past_bound:
            return


async def read_nextcloud_list(remote: RemoteClient, lists: FeedLists) -> None:
    await _read_add_remove(remote, remote.nextcloud_list_path(), lists)


async def read_simple_list(remote: RemoteClient, lists: FeedLists) -> None:
    """The simple API's account-wide list (mygpo, oPodSync): strings, or objects
    with the feed's address; anything else counts as no list."""
    try:
        async with aclosing(remote.answer(remote.simple_list_path(), {})) as events:
            async for event in events:
                if isinstance(event, Element) and event.key is None:
                    lists.add(event.value)
    except _FeedsBound:
        pass


ANY_DEVICE = "podsync-import"


async def read_removals(remote: RemoteClient, lists: FeedLists) -> None:
    """The removals of a device list by a name no app uses (see above), dropped
    from the simple list's feeds; a refusal of that name removes nothing."""
    path = remote.device_list_path(ANY_DEVICE)
    try:
        async with aclosing(remote.answer(path, {"since": "0"})) as events:
            async for event in events:
                if isinstance(event, Element) and event.key == "remove":
                    lists.remove(event.value)
    except RemoteError:
        return
    lists.drop_removed()


async def _read_add_remove(remote: RemoteClient, path: str, lists: FeedLists) -> None:
    query = {"since": "0"}
    found = False
    try:
        async with aclosing(remote.answer(path, query)) as events:
            async for event in events:
                if isinstance(event, Element) and event.key == "add":
                    lists.add(event.value)
                elif isinstance(event, Element) and event.key == "remove":
                    lists.remove(event.value)
                elif isinstance(event, Opened) and event.key == "add":
                    found = True
    except _FeedsBound:
        return
    if not found:
        raise RemoteError(remote.name("GET", path, query), "the answer has no list of feeds")


def feeds_bound(bounds: ImportBounds) -> ImportBoundReached:
    return ImportBoundReached(bounds.feeds_message())


def _feed_of(item: Any) -> Any:
    """A feed URL from a list: a string, or an object with it (the simple API)."""
    if isinstance(item, dict):
        return item.get("url") or item.get("feed")
    return item


def _described(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 60 else text[:57] + "..."
