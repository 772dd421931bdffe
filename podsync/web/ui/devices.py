"""The devices page: each device's last sync, rename, and remove (after a
confirmation: its app creates it again at its next sync)."""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from aiohttp import web

from podsync.errors import InvalidInput, NotFound
from podsync.services.browsing import plain_reason
from podsync.services.sync_health import Refusal
from podsync.web.keys import APP_PASSWORDS, SYNC_HEALTH
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import BROWSE, SIGNED_IN
from podsync.web.ui.render import Moment, notice, render, user_zone


async def devices(request: web.Request) -> web.Response:
    return await _devices_page(request)


async def _devices_page(
    request: web.Request,
    errors: dict[str, str] | None = None,
    captions: dict[str, str] | None = None,
    status: int = 200,
) -> web.Response:
    user = request[SIGNED_IN].user
    tz = user_zone(request)
    device_list, subscribed = await request.app[BROWSE].devices(user)
    passwords = await request.app[APP_PASSWORDS].list(user)
    health = await request.app[SYNC_HEALTH].of(user)
    return render(
        request,
        "devices.html",
        "Devices",
        status=status,
        errors=errors or {},
        notice=notice(request) if not errors else None,
        captions=captions or {},
        subscribed=subscribed,
        devices=[
            {
                "device_id": d.device_id,
                "caption": d.caption,
                "type": d.type,
                "last_seen": Moment(d.last_seen_at, tz),
                "refused": refused_row(health.devices.get(d.device_id), d.last_seen_at, tz),
            }
            for d in device_list
        ],
        app_passwords=[
            {
                "name": p.name,
                "last_used": None if p.last_used_at is None else Moment(p.last_used_at, tz),
                "refused": refused_row(health.app_passwords.get(p.id), p.last_used_at, tz),
            }
            for p in passwords
        ],
        revoked=[
            {
                "name": r.name,
                "revoked_at": Moment(r.revoked_at, tz),
                "refused": refused_row(health.app_passwords.get(r.password_id), None, tz),
            }
            for r in health.revoked
            if r.password_id in health.app_passwords
        ],
    )


# Why a sync was refused, as the Devices page says it.
REFUSALS = {
    "password": "wrong password",
    "locked_out": "locked out: too many different wrong passwords for your name from there",
    "revoked": "the app password it sent was revoked",
    "disabled": "your account is disabled",
}


def refused_row(refusal: Refusal | None, good_at: int | None, tz: tzinfo) -> dict[str, Any] | None:
    """A subject's last refused attempt as the page shows it; `current` when no good
    sync came after it (the device is failing now)."""
    if refusal is None:
        return None
    return {
        "at": Moment(refusal.refused_at, tz),
        "address": refusal.address,
        "client": refusal.client,
        "reason": REFUSALS.get(refusal.reason, refusal.reason),
        "locked_out": refusal.reason == "locked_out",
        "current": good_at is None or refusal.refused_at > good_at,
    }


async def rename_device(request: web.Request) -> web.Response:
    device_id = form_text(request, "device", 64)
    caption = form_text(request, "caption", 1024)
    try:
        await request.app[BROWSE].rename_device(request[SIGNED_IN].user, device_id, caption)
    except InvalidInput as exc:
        return await _devices_page(
            request, {device_id: plain_reason(str(exc))}, {device_id: caption}, 400
        )
    raise web.HTTPSeeOther("/ui/devices?done=renamed")


async def remove_device(request: web.Request) -> web.Response:
    """The first press asks; the confirmation removes."""
    user = request[SIGNED_IN].user
    device_id = form_text(request, "device", 64)
    if form_text(request, "confirm", 8) != "yes":
        device_list, _ = await request.app[BROWSE].devices(user)
        device = next((d for d in device_list if d.device_id == device_id), None)
        if device is None:
            raise NotFound("no such device")
        return render(
            request,
            "confirm.html",
            "Remove this device?",
            question=f"Remove “{device.caption}”?",
            consequence="Its listening history stays. If its app still syncs, the app "
            "creates the device again at its next sync.",
            action="/ui/devices/remove",
            fields={"device": device.device_id},
            button="Remove",
            cancel="/ui/devices",
        )
    await request.app[BROWSE].remove_device(user, device_id)
    raise web.HTTPSeeOther("/ui/devices?done=removed")
