"""Up next (`/ui/up-next`): the person's queue, kept by podsync (no app sees it).
Forms add, remove and move entries without script; the page's own small script
(`/ui/static/up_next.js`) lets a row be dragged, and sends the same form. The
player asks `/ui/up-next/next?after=<id>` what to play when an episode ends."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from podsync.errors import InvalidInput
from podsync.web.keys import FEED_INFO
from podsync.web.ui.artwork import artwork_path
from podsync.web.ui.guard import FORM, form_text
from podsync.web.ui.keys import SIGNED_IN, UP_NEXT
from podsync.web.ui.player_data import player_data, podcast_title
from podsync.web.ui.render import duration, file_name, host_and_path, notice, render
from podsync.web.ui.returns import return_to, row_anchor

# The page's drag script, a file of its own; every page's policy (render.CSP) lets
# same-origin scripts run and send the move form with fetch.
UP_NEXT_JS = "up_next.js"
PAGE = "/ui/up-next"


@dataclass(frozen=True, slots=True)
class QueueRow:
    ref: str
    title: str
    href: str
    podcast: str
    podcast_href: str | None
    length: str
    artwork: str | None
    anchor: str
    available: bool


async def page(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    service = request.app[UP_NEXT]
    entries = await service.entries(user)
    urls = {e.episode.podcast_url for e in entries if e.episode is not None}
    infos = await request.app[FEED_INFO].for_feeds(urls)
    rows = []
    for entry in entries:
        episode = entry.episode
        if episode is None:
            rows.append(
                QueueRow(entry.queued.ref, "An episode no longer yours", "", "", None, "",
                         None, f"q-{entry.queued.place}", False)
            )  # fmt: skip
            continue
        info = infos.get(episode.podcast_url)
        item = episode.item
        entity = episode.subscription
        rows.append(
            QueueRow(
                ref=episode.ref,
                title=(item.title if item else None) or file_name(episode.audio_url),
                href=f"/ui/episodes/{episode.ref}",
                podcast=podcast_title(episode, info.title if info else None),
                podcast_href=f"/ui/podcasts/{entity.sync_id}" if entity else None,
                length=duration(item.duration) if item and item.duration else "",
                artwork=artwork_path(info.artwork_hash if info else None),
                anchor=row_anchor(episode.guid, episode.episode_url),
                available=True,
            )
        )
    response = render(
        request,
        "up_next.html",
        "Up next",
        notice=notice(request),
        rows=rows,
        autoplay=await service.autoplay(user),
        back=PAGE,
        script=f"/ui/static/{UP_NEXT_JS}",
        host=host_and_path,
    )
    return response


async def add(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    first = form_text(request, "first", 4) == "yes"
    await request.app[UP_NEXT].add(user, form_text(request, "episode"), first)
    raise return_to(request, PAGE, "queued")


async def remove(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    await request.app[UP_NEXT].remove(user, form_text(request, "episode"))
    raise return_to(request, PAGE, "unqueued")


async def move(request: web.Request) -> web.Response:
    """Up, down, top or bottom (buttons), or before another entry (the drag)."""
    user = request[SIGNED_IN].user
    how = form_text(request, "move", 8)
    before = request[FORM].get("before")
    if before is None and how not in ("up", "down", "top", "bottom"):
        raise InvalidInput("say where to move the episode: up, down, top or bottom")
    await request.app[UP_NEXT].move(
        user, form_text(request, "episode"), how, before if isinstance(before, str) else None
    )
    if form_text(request, "script", 4) == "yes":
        return web.json_response({"moved": True}, headers={"Cache-Control": "no-store"})
    raise return_to(request, PAGE, "moved")


async def set_autoplay(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    value = form_text(request, "autoplay", 4)
    if value not in ("yes", "no"):
        raise InvalidInput("say whether to play the next episode by itself (yes) or not (no)")
    await request.app[UP_NEXT].set_autoplay(user, value == "yes")
    raise return_to(request, PAGE, "autoplay_on" if value == "yes" else "autoplay_off")


async def next_episode(request: web.Request) -> web.Response:
    """The player's question at the end of an episode: 200 and what to play next,
    or 204 (nothing queued, or autoplay is off)."""
    user = request[SIGNED_IN].user
    after = request.query.get("after", "")[:4096]
    episode = await request.app[UP_NEXT].next_after(user, after)
    headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
    if episode is None:
        return web.Response(status=204, headers=headers)
    return web.json_response(await player_data(request, episode), headers=headers)
