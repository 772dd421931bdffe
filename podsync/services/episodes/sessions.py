"""Listening sessions: a session of the web player is the time from play to pause,
end or leaving the page, and all its saves (every 30 s) are one play action of the
device `web`, `started` where it began, `position` where it is. Its script makes a
random token when playback starts and sends it with each save; the person's row of
the episode (`listened_episodes`) names the episode's current session and its play.

A save of the session the row names replaces that play: the play stored before is
deleted and the new one takes the user's next seq, as any new action does. A puller
whose cursor passed the old seq gets the new one at its next pull (a later client
time: the apps keep it); one that had not pulled yet gets only the new one. Nothing
else can be touched: the row is the person's own, found by their id and the
episode's, and only a play of the same device on the same episode is deleted.
"""

from __future__ import annotations

import re

from podsync.errors import InvalidInput
from podsync.storage import loop_share
from podsync.storage.engine import Connection
from podsync.store import episode_actions, listening_totals
from podsync.store.episodes import Batch
from podsync.store.listening_totals import Play

# What a script makes: 16 to 64 characters of the URL-safe base64 alphabet.
SESSION_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")


def check_session(text: str) -> str | None:
    """A session token as the page's script sends it ("" or absent: none, as a page
    of the release before sends); InvalidInput when it is not one."""
    if not text:
        return None
    if not SESSION_TOKEN.fullmatch(text):
        raise InvalidInput("the listening session is not one the player makes")
    return text


async def plays_of(batch: Batch) -> list[Play]:
    """The plays of a stored batch, with their episode and podcast ids (a few
    hundred at a time, letting a long write share the loop between them)."""
    episodes, feeds = batch.episodes, batch.feeds
    plays: list[Play] = []
    for first, piece in loop_share.pieces(batch.new):
        if first:
            await loop_share.share()
        plays += [
            Play(
                episodes[(a.podcast_key, a.episode_url)][0],
                feeds[a.podcast_key].id,
                a.occurred_at,
                a.started,
                a.position,
                a.total,
            )
            for a in piece
            if a.action == "play"
        ]
    return plays


def _the_play(batch: Batch) -> tuple[int, str | None] | None:
    """(episode id, device) of a session's save: one play, of an episode stored."""
    if len(batch.new) != 1 or batch.new[0].action != "play":
        return None
    a = batch.new[0]
    found = batch.episodes.get((a.podcast_key, a.episode_url))
    return None if found is None else (found[0], a.device_id)


async def replace_earlier_save(conn: Connection, user_id: int, batch: Batch, token: str) -> None:
    """Delete the play an earlier save of this session stored (if any)."""
    play = _the_play(batch)
    if play is None:
        return
    episode_id, device_id = play
    seq = await listening_totals.session_seq(conn, user_id, episode_id, token)
    if seq is not None and device_id is not None:
        await episode_actions.delete_play(conn, user_id, seq, episode_id, device_id)


async def remember(conn: Connection, user_id: int, batch: Batch, token: str, seq: int) -> None:
    """After the store: the session's play is now the one at `seq`."""
    play = _the_play(batch)
    if play is not None and seq:
        await listening_totals.set_session(conn, user_id, play[0], token, seq)
