"""The four calls of the Nextcloud gpoddersync API (/index.php/apps/gpoddersync/).
Authentication happened in web/nextcloud/http.py; the rules live in
services/nextcloud/sync.py and the episode core (services/episodes/)."""

from __future__ import annotations

from aiohttp import web

from podsync.errors import InvalidInput
from podsync.web.http import StreamedJson, json_bytes, json_ok, read_body
from podsync.web.keys import DEVICES, NEXTCLOUD
from podsync.web.nextcloud.http import NC_DEVICE, NC_DEVICE_CAPTION, NC_OWN_DEVICE, NC_USER


async def _device(request: web.Request) -> str:
    """The gpodder device this login writes as, created on its first call (a 400 past
    gpodder.max_devices_per_user)."""
    device_id = request[NC_DEVICE]
    await request.app[DEVICES].ensure(request[NC_USER].id, device_id, request[NC_DEVICE_CAPTION])
    return device_id


async def get_subscriptions(request: web.Request) -> web.Response:
    """Kasts signs in with this call (`since=0`): it must answer 200 to good
    credentials, and never remove on a first sync."""
    changes = await request.app[NEXTCLOUD].pull_subscriptions(
        request[NC_USER].id, request[NC_DEVICE], request[NC_OWN_DEVICE], request.query.get("since")
    )
    return json_ok({"add": changes.add, "remove": changes.remove, "timestamp": changes.timestamp})


async def post_subscriptions(request: web.Request) -> web.Response:
    body = await read_body(request)
    if not isinstance(body, dict):
        raise InvalidInput('the body must be a JSON object {"add": [...], "remove": [...]}')
    device_id = await _device(request)
    timestamp = await request.app[NEXTCLOUD].upload_subscriptions(
        request[NC_USER].id, device_id, body
    )
    return json_ok({"timestamp": timestamp})


async def get_actions(request: web.Request) -> web.StreamResponse:
    changes = await request.app[NEXTCLOUD].pull_actions(
        request[NC_USER].id, request[NC_DEVICE], request[NC_OWN_DEVICE], request.query.get("since")
    )
    # The gpodder layer's shape (ISO time without zone, play fields only on plays);
    # a long history is written as it is read.
    pieces = changes.pieces
    tail = b'],"timestamp":%d}' % changes.timestamp
    if pieces.done:
        return json_bytes(b'{"actions":[' + pieces.first + tail)

    async def last() -> bytes:
        return tail

    return StreamedJson(b'{"actions":[' + pieces.first, pieces.rest(), last)


async def post_actions(request: web.Request) -> web.Response:
    body = await read_body(request)
    if isinstance(body, dict) and isinstance(body.get("actions"), list):
        body = body["actions"]  # some clients wrap the list
    if not isinstance(body, list):
        raise InvalidInput("the body must be a JSON array of episode actions")
    device_id = await _device(request)
    timestamp = await request.app[NEXTCLOUD].upload_actions(request[NC_USER].id, device_id, body)
    return json_ok({"timestamp": timestamp})
