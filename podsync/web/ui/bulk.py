"""Marking many episodes played at once (`POST /ui/episodes/mark-many`), from a
podcast's page or New episodes: the episodes chosen with check boxes (`episode`,
several), a podcast's episodes published at or before one of them (`podcast` and
`up_to`: "this and all older"), a podcast's new episodes (`podcast` and
`new=yes`), or every new episode published before a day (`before`, YYYY-MM-DD in
the person's zone). Written as the episode page's Mark played writes one; the
browser returns to the row the form came from."""

from __future__ import annotations

from datetime import datetime, time

from aiohttp import web

from podsync.errors import InvalidInput
from podsync.numbers import parse_int
from podsync.services.web_listening import MAX_BULK
from podsync.web.ui.guard import FORM, form_text
from podsync.web.ui.keys import INBOX, SIGNED_IN, WEB_LISTENING
from podsync.web.ui.render import user_zone
from podsync.web.ui.returns import back_to

NOTHING_CHOSEN = "choose some episodes, a podcast or a date to mark played"


async def _chosen(request: web.Request) -> list[str]:
    user = request[SIGNED_IN].user
    chosen = [r for r in request[FORM].getall("episode", []) if isinstance(r, str)]
    podcast = form_text(request, "podcast", 64)
    up_to = parse_int(form_text(request, "up_to", 20))
    before = form_text(request, "before", 10)
    inbox = request.app[INBOX]
    if chosen:
        return chosen
    if podcast and up_to is not None:
        return await inbox.older_items(user, podcast, up_to)
    if podcast and form_text(request, "new", 4) == "yes":
        return [n.ref for n in await inbox.new_episodes(user) if n.item.sync_id == podcast]
    if before:
        try:
            day = datetime.strptime(before, "%Y-%m-%d").date()
        except ValueError:
            raise InvalidInput("the date must be a day, as YYYY-MM-DD") from None
        limit = datetime.combine(day, time(0), user_zone(request)).timestamp() * 1_000_000
        return [n.ref for n in await inbox.new_episodes(user) if n.item.published_at < limit]
    raise InvalidInput(NOTHING_CHOSEN)


async def mark_many(request: web.Request) -> web.Response:
    refs = await _chosen(request)
    if len(refs) > MAX_BULK:
        raise InvalidInput(f"at most {MAX_BULK:,} episodes can be marked at once")
    marked, unknown = await request.app[WEB_LISTENING].mark_many(request[SIGNED_IN].user, refs)
    back = back_to(request, "/ui/new")
    path, hash_mark, anchor = back.partition("#")
    joined = f"{path}{'&' if '?' in path else '?'}marked={marked}&unknown={unknown}"
    raise web.HTTPSeeOther(f"{joined}{hash_mark}{anchor}")
