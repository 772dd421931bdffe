"""An episode's chapters for its page and the player: those its feed lists inline
(Podlove's `psc:chapters`) as they were kept, and those behind a Podcasting 2.0
`podcast:chapters` address fetched here (`/ui/episodes/<id>/chapters.json`) through
the feed fetcher's client: the same address rules as every fetch (no private or
loopback address unless `feeds.allow_private`), its time limit and redirect count,
and a size cap of its own. With the fetcher off nothing is fetched (no outbound
connection at all). What a fetch found is kept in memory a while, for a few hundred
addresses, so a page opened again costs no fetch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from podsync.errors import NotFound
from podsync.services.episode_pages import Episode
from podsync.services.feeds import chapters
from podsync.services.feeds.chapters import Chapter
from podsync.services.feeds.http import Body, FetchError
from podsync.web.keys import FEED_FETCHER
from podsync.web.ui.keys import CHAPTERS, EPISODE_PAGES, SIGNED_IN
from podsync.web.ui.render import duration, json_answer

_BODY = Body(accept=chapters.ACCEPT, max_bytes=chapters.MAX_JSON_BYTES, noun="chapters")


@dataclass(frozen=True, slots=True)
class ChapterView:
    start: int
    at: str  # "1:10"
    title: str


def views(found: list[Chapter]) -> list[ChapterView]:
    return [ChapterView(c.start, duration(c.start), c.title) for c in found]


def of_episode(episode: Episode) -> chapters.Kept | None:
    return chapters.kept(episode.item.chapters if episode.item else None)


def proxy_path(episode: Episode) -> str:
    return f"/ui/episodes/{episode.ref}/chapters.json"


def for_player(episode: Episode) -> Any:
    """player.json's `chapters`: the inline list, the address of this server's copy
    of the linked ones, or None."""
    kept = of_episode(episode)
    if kept is None:
        return None
    if kept.url is not None:
        return proxy_path(episode)
    return [{"start": c.start, "title": c.title} for c in kept.chapters]


async def chapters_json(request: web.Request) -> web.Response:
    """GET /ui/episodes/<id>/chapters.json: {"chapters": [{"start", "title"}]}."""
    user = request[SIGNED_IN].user
    try:
        episode = await request.app[EPISODE_PAGES].episode(user, request.match_info["ref"])
    except NotFound as exc:
        return json_answer(404, message=str(exc))
    kept = of_episode(episode)
    found: list[Chapter] = []
    if kept is not None and kept.url is None:
        found = kept.chapters
    elif kept is not None and kept.url is not None:
        cache = request.app[CHAPTERS]
        cached = cache.get(kept.url)
        if cached is None:
            fetcher = request.app[FEED_FETCHER]
            if fetcher is None:
                return json_answer(200, chapters=[], message="feeds are not fetched here")
            try:
                fetched = await fetcher.client.fetch(kept.url, None, None, body=_BODY)
            except FetchError as exc:
                return json_answer(502, chapters=[], message=f"the chapters: {exc}")
            cached = chapters.from_json(fetched.body)
            cache.put(kept.url, cached)
        found = cached
    return json_answer(200, chapters=[{"start": c.start, "title": c.title} for c in found])
