"""Schema step 7's view of an episode action (both engines): the JSON object a pull
answered, stored per row until step 16 rendered it at read time instead. Kept here,
beside the steps that use it, as the reference a pull's rendering
(`services/episodes/pieces.py`) is checked against byte for byte."""

from __future__ import annotations

from podsync import timestamps
from podsync.model import json_string

_string = json_string


def episode_action_view(
    podcast_url: str,
    episode_url: str,
    action: str,
    occurred_at: int,
    device_id: str | None,
    guid: str | None,
    started: int | None,
    position: int | None,
    total: int | None,
) -> bytes:
    """An episode action's JSON object as gpodder clients read it (ASCII, compact):
    the timestamp as `YYYY-MM-DDTHH:MM:SS` (UTC, no zone, no fraction: the one form
    mygpoclient, Kasts and AntennaPod all parse), play fields only on a play with a
    known position, optional keys left out rather than null."""
    return episode_action_json(
        _string(podcast_url), episode_url, action, occurred_at, device_id, guid,
        started, position, total,
    ).encode("ascii")  # fmt: skip


def episode_action_json(
    podcast_json: str,
    episode_url: str,
    action: str,
    occurred_at: int,
    device_id: str | None,
    guid: str | None,
    started: int | None,
    position: int | None,
    total: int | None,
) -> str:
    """`episode_action_view` as text, the podcast URL given as its JSON string already
    (a pull of thousands of actions names a few hundred podcasts)."""
    text = (
        f'{{"podcast":{podcast_json},"episode":{_string(episode_url)},'
        f'"action":"{action}","timestamp":"{timestamps.format_seconds(occurred_at)}"'
    )
    if guid is not None:
        text += f',"guid":{_string(guid)}'
    if device_id is not None:
        text += f',"device":{_string(device_id)}'
    if action == "play" and position is not None:
        if started is not None:
            text += f',"started":{started}'
        text += f',"position":{position}'
        if total is not None:
            text += f',"total":{total}'
    return text + "}"
