"""The web UI player's own settings for a person: the speed per podcast (kept on the
server, so it follows the person to another browser) and the episodes removed from
Continue listening. podsync keeps both alone: no episode action is written, the apps
see nothing."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from podsync import timestamps
from podsync.errors import InvalidInput, NotFound
from podsync.model import User
from podsync.services.episode_pages import EpisodePages
from podsync.storage.engine import Engine
from podsync.store import player

# Speeds in percent: 0.8x to 3x.
SLOWEST, FASTEST, NORMAL = 80, 300, 100
SPEEDS = (80, 90, 100, 110, 120, 125, 150, 175, 200, 250, 300)
BAD_SPEED = "the speed is a number from 0.8 to 3 (such as 1.25)"


def parse_speed(text: str) -> int:
    """A speed as a form sends it ("1.25") in percent; InvalidInput outside 0.8-3."""
    try:
        value = Decimal(text.strip()[:8])
    except InvalidOperation:
        raise InvalidInput(BAD_SPEED) from None
    if not value.is_finite():
        raise InvalidInput(BAD_SPEED)
    percent = int((value * 100).to_integral_value())
    if not SLOWEST <= percent <= FASTEST:
        raise InvalidInput(BAD_SPEED)
    return percent


def speed_text(percent: int) -> str:
    """1.25x as a page and the player name it: "1.25"."""
    return f"{percent / 100:g}"


class PlayerSettings:
    def __init__(self, db: Engine, episodes: EpisodePages) -> None:
        self.db = db
        self.episodes = episodes

    async def speed(self, user: User, podcast_key: str) -> int:
        async with self.db.read() as conn:
            found = await player.speed(conn, user.id, podcast_key)
        return NORMAL if found is None else found

    async def set_speed(self, user: User, ref: str, percent: int) -> int:
        """The speed for the podcast of the episode of this page id."""
        if not SLOWEST <= percent <= FASTEST:
            raise InvalidInput(BAD_SPEED)
        episode = await self.episodes.episode(user, ref)
        async with self.db.write() as conn:
            await player.set_speed(conn, user.id, episode.podcast_key, percent, timestamps.now_us())
        return percent

    async def remove_from_continue(self, user: User, ref: str) -> None:
        """Leave this episode out of Continue listening until it is played again."""
        episode = await self.episodes.episode(user, ref)
        if episode.episode_id is None:
            raise NotFound("Nothing was played of this episode: it is not in Continue listening.")
        async with self.db.write() as conn:
            await player.remove_from_continue(
                conn, user.id, episode.episode_id, timestamps.now_us()
            )
