"""One episode of a person's, by the id of its page: what its feed says of it and what
the person did with it. Reads only (nothing is written when a page is opened).

An episode has two kinds of id, both stable and both the person's own:
- `123`: the episode's row (`episodes.id`), made by its first action (an app's, or
  this UI's); every episode in the history has one;
- `s45-g<guid>` / `s45-u<address>`: an item of the feed of the person's subscription
  45 that nothing was done with yet, by its guid (or its enclosure's address when it
  has none), in URL-safe base64. Once something is done with it, the same id
  resolves to the same episode, and its pages link to the first kind.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from podsync.errors import NotFound
from podsync.model import Subscription, User
from podsync.services.episode_state import EpisodeState, states
from podsync.storage.engine import Engine
from podsync.store import episode_pages, subscriptions
from podsync.store.episode_pages import KnownEpisode
from podsync.store.feed_info import FeedItem
from podsync.store.listening import HistoryRow

# An episode's actions read for its state: the newest; the state needs the latest
# of each kind, and a later action of any kind follows within these.
ACTIONS_READ = 200
MAX_REF = 4096
_FEED_REF = re.compile(r"s([0-9]{1,18})-([gu])([A-Za-z0-9_-]+)")
NO_SUCH_EPISODE = "There is no such episode (or it is not yours)."


def feed_ref(subscription_id: int, guid: str | None, episode_url: str) -> str:
    """The id of the page of a feed item nothing was done with yet."""
    kind, value = ("g", guid) if guid else ("u", episode_url)
    encoded = base64.urlsafe_b64encode(value.encode("utf-8")).decode("ascii").rstrip("=")
    return f"s{subscription_id}-{kind}{encoded}"


def ref_of(episode_id: int) -> str:
    return str(episode_id)


@dataclass(frozen=True, slots=True)
class Episode:
    """One episode as its page shows it."""

    ref: str  # the id of its page: its row's, once it has one
    episode_id: int | None  # its row (None: nothing done with it yet)
    podcast_key: str
    podcast_url: str  # what the apps call the podcast (the subscription's URL)
    subscription: Subscription | None  # the person's subscription to it, if any
    episode_url: str  # the file, as the apps name it ("" when the item has none)
    guid: str | None
    item: FeedItem | None  # the feed's item (None: the feed does not list it)
    state: EpisodeState | None  # what the person did with it (None: nothing)

    @property
    def audio_url(self) -> str:
        """The file to play: the feed's current enclosure, else the one acted on."""
        return (self.item.episode_url if self.item else "") or self.episode_url


def _parse(ref: str) -> tuple[int, None] | tuple[int, tuple[str, str]]:
    """(an episode's row id, None) or (a subscription's id, (kind, value))."""
    if len(ref) > MAX_REF:
        raise NotFound(NO_SUCH_EPISODE)
    if ref.isascii() and ref.isdigit() and len(ref) <= 18:
        return int(ref), None
    found = _FEED_REF.fullmatch(ref)
    if found is None:
        raise NotFound(NO_SUCH_EPISODE)
    encoded = found.group(3)
    try:
        value = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        raise NotFound(NO_SUCH_EPISODE) from None
    return int(found.group(1)), (found.group(2), value)


class EpisodePages:
    def __init__(self, db: Engine) -> None:
        self.db = db

    async def episode(self, user: User, ref: str) -> Episode:
        """The episode of a page's id; NotFound when it is no episode of this person."""
        number, item_key = _parse(ref)
        async with self.db.read() as conn:
            if item_key is None:
                known = await episode_pages.known_episode(conn, user.id, number)
                if known is None:
                    raise NotFound(NO_SUCH_EPISODE)
                entity = await subscriptions.get_by_url_key(conn, user.id, known.podcast_key)
                item = await episode_pages.feed_item(
                    conn, known.podcast_key, known.episode_url, known.guid
                )
            else:
                entity = await subscriptions.get_by_id(conn, user.id, number)
                if entity is None:
                    raise NotFound(NO_SUCH_EPISODE)
                kind, value = item_key
                by_url, by_guid = (value, None) if kind == "u" else ("", value)
                item = await episode_pages.feed_item(conn, entity.url_key, by_url, by_guid)
                if item is None:
                    raise NotFound("The feed no longer lists this episode.")
                urls = [item.episode_url]
                if item.guid:
                    urls = await episode_pages.enclosures(conn, entity.url_key, item.guid) or urls
                known = await episode_pages.known_for_item(
                    conn, user.id, entity.url_key, urls, item.guid
                )
            rows = (
                await episode_pages.episode_actions(conn, user.id, known.id, ACTIONS_READ)
                if known is not None
                else []
            )
        return _episode(entity, item, known, rows, ref)


def _episode(
    entity: Subscription | None,
    item: FeedItem | None,
    known: KnownEpisode | None,
    rows: list[HistoryRow],
    ref: str,
) -> Episode:
    found = states(rows)
    if known is not None:
        podcast_key, podcast_url = known.podcast_key, known.podcast_url
        episode_url, guid = known.episode_url, known.guid or (item.guid if item else None)
    else:
        assert entity is not None and item is not None
        podcast_key, podcast_url = entity.url_key, entity.feed_url
        episode_url, guid = item.episode_url, item.guid or None
    if entity is not None:
        podcast_url = entity.feed_url
    return Episode(
        ref=ref_of(known.id) if known is not None else ref,
        episode_id=known.id if known is not None else None,
        podcast_key=podcast_key,
        podcast_url=podcast_url,
        subscription=entity,
        episode_url=episode_url,
        guid=guid,
        item=item,
        state=found[0] if found else None,
    )
