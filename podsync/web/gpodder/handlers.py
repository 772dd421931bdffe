"""Handlers of the gpodder v2 API: auth, devices, episode actions, sync-devices.

Success is exactly 200 (AntennaPod fails on 201 and 204), every documented key is
always present, and an empty list is `[]`. Authentication happened in
`web/gpodder/http.py`: request[USER] is the URL's user.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from podsync.errors import InvalidInput
from podsync.services.gpodder.cursor import post_cursor, session_key
from podsync.web.gpodder.http import COOKIE
from podsync.web.gpodder.keys import GPODDER
from podsync.web.http import StreamedJson, json_bytes, json_ok, read_body
from podsync.web.keys import GPODDER_SESSION, USER

EPISODES = "episodes"
TRUE = frozenset({"true", "1", "yes"})


def empty_ok() -> web.Response:
    """200 with an empty body: what mygpoclient reads as success for device updates
    and PUT (`body is None`)."""
    return web.Response(status=200)


async def login(request: web.Request) -> web.Response:
    return empty_ok()  # the auth middleware checked the credentials and set the cookie


async def logout(request: web.Request) -> web.Response:
    session_id = request.get(GPODDER_SESSION)
    if session_id is not None:
        gp = request.app[GPODDER]
        await gp.auth.revoke_session(session_id)
        user = request.get(USER)
        if user is not None:
            await gp.cursors.forget_session(user.id, session_id)
    response = empty_ok()
    response.del_cookie(COOKIE, path="/")
    return response


async def list_devices(request: web.Request) -> web.Response:
    found, subscribed = await request.app[GPODDER].devices.list(request[USER].id)
    return json_ok(
        [
            {"id": d.device_id, "caption": d.caption, "type": d.type, "subscriptions": subscribed}
            for d in found
        ]
    )


async def update_device(request: web.Request) -> web.Response:
    body = await read_body(request)
    await request.app[GPODDER].devices.update(request[USER].id, request.match_info["device"], body)
    return empty_ok()


async def sync_devices(request: web.Request) -> web.Response:
    if request.method == "POST":
        await read_body(request)  # any JSON; every device is always in sync here
    return json_ok(await request.app[GPODDER].devices.sync_groups(request[USER].id))


def _session_key(request: web.Request, stream: str) -> list[str]:
    return [session_key(request[GPODDER_SESSION], stream)]


async def get_episodes(request: web.Request) -> web.StreamResponse:
    query = request.query
    gp = request.app[GPODDER]
    aggregated = query.get("aggregated", "").strip().lower() in TRUE
    pull = await gp.episodes.pull(
        request[USER].id,
        query.get("since"),
        query.get("podcast") or None,
        query.get("device") or None,
        aggregated,
    )
    user_id, keys = request[USER].id, _session_key(request, EPISODES)
    pieces = pull.pieces
    if pieces.done:  # one piece: the whole answer at once
        await gp.cursors.served(user_id, keys, pull.timestamp)
        return json_bytes(b'{"actions":[' + pieces.first + b'],"timestamp":%d}' % pull.timestamp)

    async def tail() -> bytes:  # the cursor, stored before it leaves
        await gp.cursors.served(user_id, keys, pull.timestamp)
        return b'],"timestamp":%d}' % pull.timestamp

    return StreamedJson(b'{"actions":[' + pieces.first, pieces.rest(), tail)


async def post_episodes(request: web.Request) -> web.Response:
    body = await read_body(request)
    if not isinstance(body, list):
        raise InvalidInput("the body must be a JSON array of episode actions")
    gp = request.app[GPODDER]
    user_id = request[USER].id
    upload = await gp.episodes.upload(user_id, body)
    keys = _session_key(request, EPISODES)
    timestamp = post_cursor(await gp.cursors.recall(user_id, keys), upload.before, upload.after)
    gp.cursors.answered(user_id, keys, timestamp)
    result: dict[str, Any] = {"timestamp": timestamp, "update_urls": upload.update_urls}
    return json_ok(result)
