"""Search (`/ui/search?q=...`, `&podcast=<sync id>` within one podcast): the
person's podcasts whose title or description has the words, then episodes with
them in their title or show notes, newest first, a page at a time, each with its
podcast, date and this person's state, linking to its page."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from aiohttp import web

from podsync.services.episode_search import SEARCH_PAGE
from podsync.services.episode_state import IN_PROGRESS, LABELS, played
from podsync.web.keys import FEED_INFO
from podsync.web.ui.keys import EPISODE_SEARCH, SIGNED_IN, UP_NEXT
from podsync.web.ui.render import (
    Moment,
    duration,
    file_name,
    host_and_path,
    page_number,
    render,
    user_zone,
)
from podsync.web.ui.returns import row_anchor

MAX_QUERY = 200  # characters read of what was typed


@dataclass(frozen=True, slots=True)
class ResultItem:
    title: str
    href: str
    podcast: str
    podcast_href: str
    published: Moment | None
    state: str  # NOT_PLAYED, IN_PROGRESS, FINISHED
    label: str
    detail: str  # "12:00 of 45:00" when in progress, else the length when known
    ref: str
    anchor: str
    queued: bool
    playable: bool


@dataclass(frozen=True, slots=True)
class PodcastResult:
    title: str
    href: str
    subscribed: bool


async def search(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    tz = user_zone(request)
    typed = request.query.get("q", "")[:MAX_QUERY]
    within = request.query.get("podcast", "")[:64] or None
    found = await request.app[EPISODE_SEARCH].search(user, typed, page_number(request), within)
    titles = await request.app[FEED_INFO].titles({r.subscription.feed_url for r in found.results})
    queued = await request.app[UP_NEXT].keys(user) if found.results else set()
    items = []
    for r in found.results:
        key = played(r.state)
        play = r.state.play if r.state is not None else None
        if key == IN_PROGRESS and play is not None and play.total:
            detail = f"{duration(play.position or 0)} of {duration(play.total)}"
        else:
            detail = duration(r.item.duration) if r.item.duration else ""
        feed = r.subscription.feed_url
        items.append(
            ResultItem(
                title=r.item.title or file_name(r.item.episode_url),
                href=f"/ui/episodes/{r.ref}",
                podcast=r.subscription.title or titles.get(feed) or host_and_path(feed),
                podcast_href=f"/ui/podcasts/{r.subscription.sync_id}",
                published=Moment(r.item.published_at, tz) if r.item.published_at else None,
                state=key,
                label=LABELS[key],
                detail=detail,
                ref=r.ref,
                anchor=row_anchor(r.item.guid or None, r.item.episode_url),
                queued=(
                    r.item.podcast_key,
                    f"g{r.item.guid}" if r.item.guid else f"u{r.item.episode_url}",
                )
                in queued,
                playable=bool(r.item.episode_url),
            )
        )

    podcasts = [
        PodcastResult(
            p.title or p.feed_title or host_and_path(p.feed_url),
            f"/ui/podcasts/{p.sync_id}",
            p.subscribed,
        )
        for p in found.podcasts
    ]
    scope = {"podcast": found.within.sync_id} if found.within is not None else {}
    within_title = None
    if found.within is not None:
        w = found.within
        within_title = w.title or w.feed_title or host_and_path(w.feed_url)

    def href(number: int) -> str:
        query = {"q": typed, **scope, **({"page": str(number)} if number > 1 else {})}
        return "/ui/search?" + urlencode(query)

    return render(
        request,
        "search.html",
        "Find an episode",
        q=typed,
        words=found.words,
        results=items,
        podcasts=podcasts,
        within=found.within.sync_id if found.within is not None else "",
        within_title=within_title,
        within_href=f"/ui/podcasts/{found.within.sync_id}" if found.within is not None else "",
        first=(found.page - 1) * SEARCH_PAGE + 1,
        page_label=f"Page {found.page}" if found.page > 1 or found.more else "",
        back=href(found.page),
        prev_href=href(found.page - 1) if found.page > 1 else None,
        next_href=href(found.page + 1) if found.more else None,
    )
