"""Find an episode (`/ui/search?q=...`): words of its title, across all of the
person's podcasts, newest first, a page at a time, each with its podcast, date and
this person's state, linking to its page."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from aiohttp import web

from podsync.services.episode_search import SEARCH_PAGE
from podsync.services.episode_state import IN_PROGRESS, LABELS, played
from podsync.web.keys import FEED_INFO
from podsync.web.ui.keys import EPISODE_SEARCH, SIGNED_IN
from podsync.web.ui.render import (
    Moment,
    duration,
    file_name,
    host_and_path,
    page_number,
    render,
    user_zone,
)

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


async def search(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    tz = user_zone(request)
    typed = request.query.get("q", "")[:MAX_QUERY]
    found = await request.app[EPISODE_SEARCH].search(user, typed, page_number(request))
    titles = await request.app[FEED_INFO].titles({r.subscription.feed_url for r in found.results})
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
            )
        )

    def href(number: int) -> str:
        return "/ui/search?" + urlencode({"q": typed, **({"page": number} if number > 1 else {})})

    return render(
        request,
        "search.html",
        "Find an episode",
        q=typed,
        words=found.words,
        results=items,
        first=(found.page - 1) * SEARCH_PAGE + 1,
        page_label=f"Page {found.page}" if found.page > 1 or found.more else "",
        prev_href=href(found.page - 1) if found.page > 1 else None,
        next_href=href(found.page + 1) if found.more else None,
    )
