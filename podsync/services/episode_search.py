"""Find a podcast or an episode by words of its title or its show notes, across all
of a person's podcasts (or within one): the person's podcasts whose title or
description has the words first, then the feed items the fetcher kept, each with
the person's state and the id of its page. What a search reads is the person's own
podcasts and their items (store/episode_search.py), never the server's.

A page holds SEARCH_PAGE results; whether there is a next one is known by reading
one more (no count of every match: a word in every title of a large account would
cost a read of all of them for a number nobody needs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from podsync.model import Subscription, User
from podsync.services.episode_pages import feed_ref
from podsync.services.episode_state import EpisodeState, states
from podsync.storage.engine import Engine
from podsync.store import Connection, episode_pages, episode_search, subscriptions
from podsync.store.episode_search import FoundItem, PodcastTitle
from podsync.words import matches, query_words

SEARCH_PAGE = 30
# Pages past this are not read (a person refines the words long before).
MAX_SEARCH_PAGE = 100
# The actions read per result for its state (the newest; as an episode's page).
STATE_ACTIONS = 50


@dataclass(frozen=True, slots=True)
class Result:
    ref: str  # the id of the episode's page
    item: FoundItem
    subscription: Subscription
    state: EpisodeState | None


@dataclass(frozen=True, slots=True)
class SearchPage:
    words: list[str]  # what was looked for (empty: nothing typed)
    results: list[Result]
    page: int
    more: bool  # a next page has results
    podcasts: list[PodcastTitle] = field(default_factory=list)  # first page only
    within: PodcastTitle | None = None  # the one podcast searched, if one was asked


class EpisodeSearch:
    def __init__(self, db: Engine) -> None:
        self.db = db

    async def search(
        self, user: User, typed: str, page: int, podcast: str | None = None
    ) -> SearchPage:
        """`podcast`: the sync id of one of the person's podcasts to search within
        (one that is not theirs searches nothing)."""
        words = query_words(typed)
        page = min(max(page, 1), MAX_SEARCH_PAGE)
        async with self.db.read(threaded=True) as conn:
            own = await episode_search.podcasts(conn, user.id)
            within = next((p for p in own if p.sync_id == podcast), None) if podcast else None
            if not words or (podcast and within is None):
                return SearchPage([], [], 1, False, within=within)
            shown = []
            if within is None and page == 1:
                shown = [p for p in own if _podcast_matches(words, p)]
            offset = (page - 1) * SEARCH_PAGE
            found = await episode_search.find(
                conn,
                user.id,
                words,
                SEARCH_PAGE + 1,
                offset,
                within.url_key if within is not None else None,
            )
            more = len(found) > SEARCH_PAGE and page < MAX_SEARCH_PAGE
            results = []
            entities: dict[str, Subscription | None] = {}
            for item in found[:SEARCH_PAGE]:
                key = item.podcast_key
                if key not in entities:
                    entities[key] = await subscriptions.get_by_url_key(conn, user.id, key)
                entity = entities[key]
                if entity is None or entity.id is None:
                    continue  # unsubscribed and forgotten between the two reads
                results.append(await _result(conn, user, entity, item))
        return SearchPage(words, results, page, more, shown, within)


def _podcast_matches(words: list[str], podcast: PodcastTitle) -> bool:
    text = " ".join(t for t in (podcast.title, podcast.feed_title, podcast.description) if t)
    return matches(words, text)


async def _result(conn: Connection, user: User, entity: Subscription, item: FoundItem) -> Result:
    assert entity.id is not None
    urls = [item.episode_url] if item.episode_url else []
    if item.guid:
        urls = await episode_pages.enclosures(conn, entity.url_key, item.guid) or urls
    known = await episode_pages.known_for_item(conn, user.id, entity.url_key, urls, item.guid)
    if known is None:
        ref = feed_ref(entity.id, item.guid or None, item.episode_url)
        return Result(ref, item, entity, None)
    rows = await episode_pages.episode_actions(conn, user.id, known.id, STATE_ACTIONS)
    found = states(rows)
    return Result(str(known.id), item, entity, found[0] if found else None)
