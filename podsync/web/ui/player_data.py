"""What the player needs to play an episode, as JSON: the shape of
`/ui/episodes/<id>/player.json` and of Up next's `/ui/up-next/next`, made here once."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from podsync.services.episode_pages import Episode
from podsync.services.episode_state import IN_PROGRESS, played
from podsync.services.web_listening import length_of
from podsync.web.keys import FEED_INFO
from podsync.web.ui.artwork import artwork_path
from podsync.web.ui.render import file_name, host_and_path, shown_url


def podcast_title(episode: Episode, feed_title: str | None) -> str:
    entity = episode.subscription
    return (entity.title if entity else None) or feed_title or host_and_path(episode.podcast_url)


async def player_data(request: web.Request, episode: Episode) -> dict[str, Any]:
    """{"ref", "title", "podcast", "audio", "position", "total", "artwork", "speed",
    "chapters", "page"}: where to start is where the person stopped (0 unless in
    progress); speed 1 and no chapters until the player keeps them."""
    info = (await request.app[FEED_INFO].for_feeds([episode.podcast_url])).get(episode.podcast_url)
    play = episode.state.play if episode.state is not None else None
    in_progress = played(episode.state) == IN_PROGRESS and play is not None
    title = (episode.item.title if episode.item else None) or file_name(episode.audio_url)
    return {
        "ref": episode.ref,
        "title": title,
        "podcast": podcast_title(episode, info.title if info else None),
        "audio": shown_url(episode.audio_url) or "",
        "position": (play.position or 0) if in_progress and play is not None else 0,
        "total": length_of(episode) or 0,
        "artwork": artwork_path(info.artwork_hash if info else None),
        "speed": 1.0,
        "chapters": [],
        "page": f"/ui/episodes/{episode.ref}",
    }
