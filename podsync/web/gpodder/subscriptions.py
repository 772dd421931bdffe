"""Handlers of the gpodder subscription stream (v2, spec 5.5 and 5.6) and of the
simple API v1 (spec 5.10). Every device sees the account-wide list; an unknown
device is created on first use, by an app (never by a page of another site)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from functools import partial

from aiohttp import web

from podsync.errors import Forbidden, InvalidInput
from podsync.model import json_string
from podsync.services.devices import check_device_id
from podsync.services.gpodder.cursor import device_key, post_cursor, session_key
from podsync.services.gpodder.subscriptions import parse_url_list
from podsync.web.gpodder.handlers import empty_ok
from podsync.web.gpodder.keys import GPODDER
from podsync.web.http import json_ok, read_body
from podsync.web.keys import GPODDER_SESSION, USER
from podsync.web.origin import foreign_page

STREAM = "subscriptions"
FORMATS = ("json", "opml", "txt")
# Feeds a list is written for on the event loop (a few ms); a longer one is written on
# a worker thread: 20,000 feeds held the loop ~1 s as OPML, 40-60 ms as JSON.
LIST_ON_LOOP_MAX = 500


def json_list(feeds: list[tuple[str, str | None]], titled: bool) -> bytes:
    """The simple API's JSON list, byte for byte as `json_ok` would write it: the URLs
    (a device's list), or `{"url", "title"}` objects, a feed without a title named by
    its URL. Joined from each string's JSON text: no object per feed, and on a worker
    thread it is Python, so the event loop gets its turn (serve/python_lock.py)."""
    s = json_string
    if titled:
        items = [f'{{"url":{s(url)},"title":{s(title or url)}}}' for url, title in feeds]
    else:
        items = [s(url) for url, _ in feeds]
    return ("[" + ",".join(items) + "]").encode("ascii")


def render_list(
    feeds: list[tuple[str, str | None]], fmt: str, titled: bool, heading: str
) -> tuple[bytes, str]:
    """The simple API's list in `fmt` (json, opml, txt): its bytes (UTF-8) and their
    type. `titled`: JSON objects with titles (not bare URLs); `heading`: the OPML's."""
    if fmt == "txt":
        return "".join([f"{url}\n" for url, _ in feeds]).encode("utf-8"), "text/plain"
    if fmt == "opml":  # the OPML module loads with the first OPML asked for
        from podsync.opml import OutlineFeed, serialise_opml

        outlines = (OutlineFeed(url, title) for url, title in feeds)
        return serialise_opml(outlines, heading, datetime.now(UTC)), "text/x-opml"
    return json_list(feeds, titled), "application/json"


def _cursor_keys(request: web.Request, device_id: str) -> list[str]:
    """Where the served cursor is remembered: the session first (two installs may
    share a device id), then the device (Kasts keeps no cookie)."""
    return [session_key(request[GPODDER_SESSION], STREAM), device_key(device_id, STREAM)]


async def _device(request: web.Request) -> str:
    device_id = check_device_id(request.match_info["device"])
    devices = request.app[GPODDER].devices
    reason = foreign_page(request)  # a write from such a page never got this far
    if reason is not None and not await devices.exists(request[USER].id, device_id):
        # A link on another site opened with the saved credentials or the cookie
        # (SameSite=Lax sends it on a top-level navigation) must not fill the
        # device limit (contract section 15).
        raise Forbidden(
            f"a new device is made by an app, not by a web page of another site ({reason})"
        )
    await devices.ensure(request[USER].id, device_id)
    return device_id


async def get_changes(request: web.Request) -> web.Response:
    device_id = await _device(request)
    gp = request.app[GPODDER]
    user_id = request[USER].id
    changes = await gp.subscriptions.pull(user_id, request.query.get("since"))
    await gp.cursors.served(user_id, _cursor_keys(request, device_id), changes.timestamp)
    return json_ok({"add": changes.add, "remove": changes.remove, "timestamp": changes.timestamp})


async def post_changes(request: web.Request) -> web.Response:
    body = await read_body(request)
    device_id = await _device(request)
    gp = request.app[GPODDER]
    user_id = request[USER].id
    upload = await gp.subscriptions.upload(user_id, device_id, body)
    keys = _cursor_keys(request, device_id)
    timestamp = post_cursor(await gp.cursors.recall(user_id, keys), upload.before, upload.after)
    gp.cursors.answered(user_id, keys, timestamp)
    return json_ok({"timestamp": timestamp, "update_urls": upload.update_urls})


def _format(request: web.Request, allowed: tuple[str, ...] = FORMATS) -> str:
    fmt = request.match_info["fmt"]
    if fmt not in allowed:
        raise InvalidInput(f"format must be one of {', '.join(allowed)}, not {fmt[:20]!r}")
    return fmt


async def get_list(request: web.Request) -> web.Response:
    """GET /subscriptions/{u}.{fmt} and /subscriptions/{u}/{d}.{fmt}."""
    fmt = _format(request)
    if "device" in request.match_info:
        await _device(request)
    user = request[USER]
    feeds = await request.app[GPODDER].subscriptions.current(user.id)
    render = partial(
        render_list,
        feeds,
        fmt,
        "device" not in request.match_info,
        f"podsync subscriptions of {user.name}",
    )
    big = len(feeds) > LIST_ON_LOOP_MAX
    body, content_type = await asyncio.to_thread(render) if big else render()
    return web.Response(body=body, content_type=content_type, charset="utf-8")


async def put_list(request: web.Request) -> web.Response:
    """PUT (or POST) /subscriptions/{u}/{d}.{fmt}: the list becomes the body's."""
    fmt = _format(request)
    body = await request.read()
    if fmt == "opml":
        from podsync.opml import parse_opml

        # A big document takes the parser long: off the event loop.
        outlines = (
            await asyncio.to_thread(parse_opml, body) if len(body) > 65536 else parse_opml(body)
        )
        urls = [f.url for f in outlines]
    else:
        urls = parse_url_list(body, fmt)
    device_id = await _device(request)
    await request.app[GPODDER].subscriptions.replace(request[USER].id, device_id, urls)
    return empty_ok()
