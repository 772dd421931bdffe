"""New episodes (`/ui/new`): what the person's podcasts published since they
subscribed, newest first across all podcasts, each with play, add to Up next, mark
played and dismiss; "mark all played" for one podcast or for everything published
before a date. Every form returns to the row it came from."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from aiohttp import web

from podsync.errors import InvalidInput
from podsync.services.web_listening import MAX_BULK
from podsync.web.keys import FEED_INFO
from podsync.web.ui.artwork import artwork_path
from podsync.web.ui.guard import FORM
from podsync.web.ui.keys import INBOX, SIGNED_IN, UP_NEXT
from podsync.web.ui.render import (
    Moment,
    duration,
    file_name,
    host_and_path,
    notice,
    page_number,
    render,
    user_zone,
)
from podsync.web.ui.returns import return_to, row_anchor

PAGE = "/ui/new"


@dataclass(frozen=True, slots=True)
class InboxRow:
    ref: str
    title: str
    href: str
    podcast: str
    podcast_href: str
    sync_id: str
    published: Moment
    length: str
    artwork: str | None
    anchor: str
    queued: bool


async def page(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    tz = user_zone(request)
    found = await request.app[INBOX].page(user, page_number(request))
    infos = await request.app[FEED_INFO].for_feeds({n.item.feed_url for n in found.episodes})
    queued = await request.app[UP_NEXT].keys(user)

    def href(number: int) -> str:
        return PAGE + (f"?{urlencode({'page': number})}" if number > 1 else "")

    rows = []
    podcasts: dict[str, str] = {}
    for new in found.episodes:
        item = new.item
        info = infos.get(item.feed_url)
        podcast = (
            item.podcast_title or (info.title if info else None) or host_and_path(item.feed_url)
        )
        podcasts.setdefault(item.sync_id, podcast)
        kind = f"g{item.guid}" if item.guid else f"u{item.episode_url}"
        rows.append(
            InboxRow(
                ref=new.ref,
                title=item.title or file_name(item.episode_url),
                href=f"/ui/episodes/{new.ref}",
                podcast=podcast,
                podcast_href=f"/ui/podcasts/{item.sync_id}",
                sync_id=item.sync_id,
                published=Moment(item.published_at, tz),
                length=duration(item.duration) if item.duration else "",
                artwork=artwork_path(info.artwork_hash if info else None),
                anchor=row_anchor(item.guid or None, item.episode_url),
                queued=(item.podcast_key, kind) in queued,
            )
        )
    return render(
        request,
        "inbox.html",
        "New episodes",
        notice=notice(request),
        rows=rows,
        total=found.total,
        capped=found.capped,
        podcasts=sorted(podcasts.items(), key=lambda p: p[1].lower()),
        back=href(found.page),
        page_label=f"Page {found.page} of {found.pages}" if found.pages > 1 else "",
        prev_href=href(found.page - 1) if found.page > 1 else None,
        next_href=href(found.page + 1) if found.page < found.pages else None,
    )


async def dismiss(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    refs = [r for r in request[FORM].getall("episode", []) if isinstance(r, str)][:MAX_BULK]
    if not refs:
        raise InvalidInput("choose an episode to dismiss")
    await request.app[INBOX].dismiss(user, refs)
    raise return_to(request, PAGE, "dismissed")
