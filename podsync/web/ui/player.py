"""The mini-player's side of the server: what it needs to play an episode
(`/ui/episodes/<id>/player.json`), the speed per podcast it remembers, and
"Remove from Continue listening".

The player itself is the UI's script (static/player.js) in a bar at the bottom of
every page, kept across page changes by htmx (`hx-boost`, `hx-preserve`). Any link
`a[data-play="<episode id>"]` to an episode's page starts it there at the synced
position; without script the link opens the episode's page, which plays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from aiohttp import web

from podsync.errors import InvalidInput, NotFound
from podsync.services.episode_pages import Episode
from podsync.services.episode_state import IN_PROGRESS, played
from podsync.services.player import parse_speed, speed_text
from podsync.store.listening import HistoryRow
from podsync.web.keys import FEED_INFO
from podsync.web.ui.artwork import artwork_path
from podsync.web.ui.chapters import for_player as chapters_for_player
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import EPISODE_PAGES, PLAYER_SETTINGS, SIGNED_IN
from podsync.web.ui.listening import HistoryItem, history_items
from podsync.web.ui.render import file_name, host_and_path, json_answer, shown_url


async def player_info(request: web.Request, episode: Episode) -> dict[str, Any]:
    """What the mini-player needs to play an episode: its file, where the person
    stopped, its podcast's speed and artwork. (The shape `/ui/up-next/next` answers
    with too.)"""
    user = request[SIGNED_IN].user
    info = (await request.app[FEED_INFO].for_feeds([episode.podcast_url])).get(episode.podcast_url)
    entity = episode.subscription
    podcast = (
        (entity.title if entity else None)
        or (info.title if info else None)
        or host_and_path(episode.podcast_url)
    )
    title = (episode.item.title if episode.item else None) or file_name(episode.audio_url)
    play = episode.state.play if episode.state is not None else None
    position = total = 0
    if play is not None:
        total = play.total or 0
        if played(episode.state) == IN_PROGRESS:
            position = min(play.position or 0, total) if total else play.position or 0
    if not total and episode.item and episode.item.duration:
        total = episode.item.duration
    percent = await request.app[PLAYER_SETTINGS].speed(user, episode.podcast_key)
    answer: dict[str, Any] = {
        "ref": episode.ref,
        "title": title,
        "podcast": podcast,
        "audio": shown_url(episode.audio_url),
        "position": position,
        "total": total,
        "artwork": artwork_path(info.artwork_hash if info else None),
        "speed": float(speed_text(percent)),
        "chapters": chapters_for_player(episode),
        "page": f"/ui/episodes/{episode.ref}",
    }
    if entity is not None:
        answer["podcast_url"] = f"/ui/podcasts/{entity.sync_id}"
    return answer


async def player_json(request: web.Request) -> web.Response:
    """GET /ui/episodes/<id>/player.json: the same rules as the episode's page (the
    person's own episodes only, else 404)."""
    user = request[SIGNED_IN].user
    try:
        episode = await request.app[EPISODE_PAGES].episode(user, request.match_info["ref"])
    except NotFound as exc:
        return json_answer(404, message=str(exc))
    return json_answer(200, **await player_info(request, episode))


async def set_speed(request: web.Request) -> web.Response:
    """POST /ui/episodes/<id>/speed (`speed`: 0.8 to 3): the speed of the episode's
    podcast for this person, on every browser they use."""
    user = request[SIGNED_IN].user
    try:
        percent = parse_speed(form_text(request, "speed", 8))
        await request.app[PLAYER_SETTINGS].set_speed(user, request.match_info["ref"], percent)
    except InvalidInput as exc:
        return json_answer(400, saved=False, message=str(exc))
    except NotFound as exc:
        return json_answer(404, saved=False, message=str(exc))
    return json_answer(200, saved=True, speed=float(speed_text(percent)))


async def remove_from_continue(request: web.Request) -> web.Response:
    """POST /ui/continue/remove (a form): the episode leaves Continue listening until
    it is played again; no episode action is written."""
    user = request[SIGNED_IN].user
    await request.app[PLAYER_SETTINGS].remove_from_continue(
        user, form_text(request, "episode", 4096)
    )
    raise web.HTTPSeeOther("/ui/?done=continue_removed#h-continue")


@dataclass(frozen=True, slots=True)
class ContinueItem:
    """A row of Continue listening: the history's row, its podcast's artwork, and its
    episode's id (for the play button and Remove)."""

    row: HistoryItem
    ref: str
    artwork: str | None
    initial: str


async def continue_items(
    request: web.Request, rows: Sequence[HistoryRow], captions: dict[str, str], tz: tzinfo
) -> list[ContinueItem]:
    items = await history_items(request, rows, captions, tz)
    infos = await request.app[FEED_INFO].for_feeds(list({r.podcast_url for r in rows}))
    found = []
    for item, row in zip(items, rows, strict=True):
        info = infos.get(row.podcast_url)
        art = artwork_path(info.artwork_hash if info else None)
        found.append(ContinueItem(item, str(row.episode_id), art, item.podcast[:1]))
    return found
