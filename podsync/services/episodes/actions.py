"""Typed episode actions a service writes itself (the web player), checked by the same
rules as an app's upload: the URLs as stored (`items.normalise_url`), a guid only
when it is one an upload would keep. No wire format: nothing is built to be parsed
back."""

from __future__ import annotations

from podsync.errors import InvalidInput
from podsync.feeds import MAX_GUID, has_bad_characters, url_key
from podsync.services.episodes.items import normalise_url
from podsync.store.episodes import EpisodeAction

UNUSABLE = "the episode could not be recorded (its address is not usable)"


def action(
    podcast_url: str,
    episode_url: str,
    guid: str | None,
    kind: str,
    occurred_at: int,
    device_id: str | None,
) -> EpisodeAction:
    """An action without play fields; InvalidInput when a URL is not usable."""
    podcast = normalise_url(podcast_url)
    episode = normalise_url(episode_url)
    if podcast is None or episode is None:
        raise InvalidInput(UNUSABLE)
    usable_guid = guid if guid and len(guid) <= MAX_GUID and not has_bad_characters(guid) else None
    return EpisodeAction(
        0, podcast, url_key(podcast), episode, kind, occurred_at, device_id, usable_guid,
        None, None, None,
    )  # fmt: skip


def play(
    podcast_url: str,
    episode_url: str,
    guid: str | None,
    occurred_at: int,
    device_id: str | None,
    started: int,
    position: int,
    total: int | None,
) -> EpisodeAction:
    """A play from `started` to `position` of `total` seconds (None or 0: unknown)."""
    made = action(podcast_url, episode_url, guid, "play", occurred_at, device_id)
    made.started, made.position, made.total = started, position, total or None
    return made
