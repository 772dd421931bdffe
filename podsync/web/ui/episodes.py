"""A page per episode (`/ui/episodes/<id>`): what its feed says of it, what the person
did with it, a player, and Mark played / not played.

Without script the player is the browser's own `<audio controls>`, playing the file
from its own host (podsync relays no audio), from where the person stopped on any
device (a media fragment, `#t=`, which the browser reads without script), or from a
time of the show notes (`?t=754`); the page says the position is not saved. With
the UI's script (`/ui/static/player.js`) the mini-player at the bottom of every page
plays it instead (web/ui/player.py) and writes the progress back as play actions of
the device `web`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from podsync.errors import InvalidInput, NotFound, Unavailable
from podsync.numbers import parse_int
from podsync.services.episode_pages import Episode
from podsync.services.episode_state import FINISHED, IN_PROGRESS, LABELS, NOT_PLAYED, played
from podsync.services.episodes.sessions import check_session
from podsync.services.feeds.notes import MAX_DURATION, sanitize
from podsync.services.up_next import item_key
from podsync.services.web_listening import WEB_CAPTION, check_progress, length_of
from podsync.web.keys import FEED_INFO
from podsync.web.ui.artwork import artwork_path
from podsync.web.ui.chapters import of_episode, proxy_path, views
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import EPISODE_PAGES, LISTENING, SIGNED_IN, UP_NEXT, WEB_LISTENING
from podsync.web.ui.note_links import with_time_links
from podsync.web.ui.render import (
    Moment,
    duration,
    file_name,
    host_and_path,
    notice,
    render,
    shown_url,
    user_zone,
)
from podsync.web.ui.returns import back_to, with_done

PROGRESS_FIELDS = ("started", "position", "total")


@dataclass(frozen=True, slots=True)
class StateView:
    """Where the person is with an episode, in words."""

    key: str  # NOT_PLAYED, IN_PROGRESS, FINISHED
    label: str
    position: int  # seconds (0 unless in progress)
    total: int
    progress: int | None  # percent, for a bar
    text: str  # "12:00 of 45:00 (27%)"
    device: str | None
    at: Moment | None


def state_view(episode: Episode, captions: dict[str, str], tz: Any) -> StateView:
    key = played(episode.state)
    play = episode.state.play if episode.state is not None else None
    at = device = None
    if episode.state is not None:
        shown = play if play is not None and key != NOT_PLAYED else episode.state.latest
        if key == NOT_PLAYED and episode.state.new is not None:
            shown = episode.state.new
        at = Moment(shown.occurred_at, tz)
        device = captions.get(shown.device_id or "", shown.device_id)
    if key == IN_PROGRESS and play is not None and play.total:
        position, total = min(play.position or 0, play.total), play.total
        progress = min(100, round(position * 100 / total))
        text = f"{duration(position)} of {duration(total)} ({progress}%)"
        return StateView(key, LABELS[key], position, total, progress, text, device, at)
    return StateView(key, LABELS[key], 0, 0, None, "", device, at)


def episode_title(episode: Episode) -> str:
    return (episode.item.title if episode.item else None) or file_name(episode.audio_url)


async def episode_page(request: web.Request) -> web.StreamResponse:
    user = request[SIGNED_IN].user
    tz = user_zone(request)
    ref = request.match_info["ref"]
    episode = await request.app[EPISODE_PAGES].episode(user, ref)
    if episode.ref != ref:  # something was done with it since: its own id
        query = f"?{request.query_string}" if request.query_string else ""
        raise web.HTTPFound(f"/ui/episodes/{episode.ref}{query}")
    info = (await request.app[FEED_INFO].for_feeds([episode.podcast_url])).get(episode.podcast_url)
    entity = episode.subscription
    podcast_title = (
        (entity.title if entity else None)
        or (info.title if info else None)
        or host_and_path(episode.podcast_url)
    )
    _, device_list = await request.app[LISTENING].filters(user)
    captions = {d.device_id: d.caption for d in device_list}
    state = state_view(episode, captions, tz)
    item = episode.item
    length = length_of(episode)
    audio = shown_url(episode.audio_url)
    start = state.position if state.key == IN_PROGRESS else 0
    asked = parse_int(request.query.get("t", ""))  # a time of the notes, without script
    from_notes = asked is not None and 0 <= asked <= MAX_DURATION
    if asked is not None and from_notes:
        start = asked
    title = episode_title(episode)
    kept = of_episode(episode)
    response = render(
        request,
        "episode.html",
        title,
        notice=notice(request),
        ref=episode.ref,
        podcast_title=podcast_title,
        podcast_href=f"/ui/podcasts/{entity.sync_id}" if entity else None,
        artwork=artwork_path(info.artwork_hash if info else None),
        published=Moment(item.published_at, tz) if item and item.published_at else None,
        length=duration(length) if length else None,
        length_from_feed=bool(item and item.duration),
        # Sanitized when stored, and again here (the template marks it safe).
        notes=with_time_links(sanitize(item.notes, episode.podcast_url), episode.ref)
        if item and item.notes
        else None,
        chapters=views(kept.chapters) if kept else [],
        chapters_src=proxy_path(episode) if kept and kept.url else None,
        link=shown_url(item.link if item else None),
        audio=audio,
        audio_src=f"{audio}#t={start}" if audio and start else audio,
        media_type=(item.media_type if item else None) or "",
        listed=item is not None,
        state=state,
        start=start,
        start_text=duration(start),
        from_notes=from_notes,
        known_length=length or 0,
        can_mark_played=state.key != FINISHED and length is not None and bool(audio),
        can_mark_unplayed=state.key != NOT_PLAYED and bool(audio),
        web_caption=WEB_CAPTION,
        back=f"/ui/episodes/{episode.ref}",
        queued=item_key(episode) in await request.app[UP_NEXT].keys(user),
    )
    return response


async def mark(request: web.Request) -> web.Response:
    """Mark an episode played or not played (a form: no script needed)."""
    user = request[SIGNED_IN].user
    ref = form_text(request, "episode", 4096)
    value = form_text(request, "played", 8)
    if value not in ("yes", "no"):
        raise InvalidInput("say whether the episode is played (yes) or not (no)")
    episode = await request.app[WEB_LISTENING].mark(user, ref, value == "yes")
    back = back_to(request, f"/ui/episodes/{episode.ref}")
    if back.startswith("/ui/episodes/"):
        back = f"/ui/episodes/{episode.ref}"  # its own id, once it has one
    code = "played" if value == "yes" else "unplayed"
    raise web.HTTPSeeOther(with_done(back, code))


def _json(status: int, **body: Any) -> web.Response:
    response = web.json_response(body, status=status)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


async def progress(request: web.Request) -> web.Response:
    """The player's script: a save of a listening session (`started`, `position`,
    `total` in seconds; `session`, the token the script made when playback began).
    JSON both ways; the form's CSRF token as every POST of the UI."""
    user = request[SIGNED_IN].user
    numbers = [parse_int(form_text(request, name, 20)) for name in PROGRESS_FIELDS]
    try:
        stretch = check_progress(*numbers)
        session = check_session(form_text(request, "session", 65))
        episode = await request.app[WEB_LISTENING].progress(
            user, request.match_info["ref"], stretch, session
        )
    except InvalidInput as exc:  # the device limit, the action limit, a bad number
        return _json(400, saved=False, message=_sentence(str(exc)))
    except NotFound as exc:
        return _json(404, saved=False, message=str(exc))
    except Unavailable as exc:
        response = _json(503, saved=False, message=_sentence(exc.reason))
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    tz = user_zone(request)
    at = Moment(episode.state.latest.occurred_at, tz) if episode.state else None
    # What the page's "Your state" shows, for the script to update it in place.
    now = state_view(episode, {"web": WEB_CAPTION}, tz)
    return _json(
        200,
        saved=True,
        episode=episode.ref,
        state=LABELS[played(episode.state)],
        at=at.text if at else "",
        key=now.key,
        text=now.text,
        progress=now.progress,
        position=now.position,
        total=now.total,
        device=now.device or "",
    )


def _sentence(text: str) -> str:
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."
