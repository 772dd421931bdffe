"""Transport and authentication of the Nextcloud API (the nextcloud spec).

`nextcloud_route` wraps each handler:
- A request other than GET/HEAD/OPTIONS that a browser marks as made by a page of
  another site is refused with 403 before anything else (contract section 15): a
  browser attaches the Basic credentials it saved to any site's form posts, and a
  refused request never counts as a failed login.
- `basic` routes need HTTP Basic: the login name and an app password, or the account
  password; a wrong one is 401 with `WWW-Authenticate: Basic`.
- `Cache-Control: no-store` on every answer.

Who wrote an episode action or a subscription change is a gpodder device: one per
app password (`nextcloud-<id>`, captioned with its name), and `nextcloud` for every
app that signs in with the account password.
"""

from __future__ import annotations

import functools

from aiohttp import web

from podsync.errors import Forbidden, TooManyRequests, Unauthorized
from podsync.model import User
from podsync.web.errors import basic_refusal
from podsync.web.http import basic_credentials, login_caller, note_refusal
from podsync.web.keys import BASIC_AUTH, SYNC_HEALTH
from podsync.web.middleware import Handler, checks_own_callers
from podsync.web.origin import refuse_foreign_write

CHALLENGE = 'Basic realm="podsync", charset="UTF-8"'
ACCOUNT_DEVICE = "nextcloud"
ACCOUNT_DEVICE_CAPTION = "Nextcloud API (account password)"
NC_USER = web.RequestKey("nextcloud_user", User)
NC_DEVICE = web.RequestKey("nextcloud_device", str)
NC_DEVICE_CAPTION = web.RequestKey("nextcloud_device_caption", str)
# The device is one app's alone (an app password's), not shared by every app that
# signs in with the account password.
NC_OWN_DEVICE = web.RequestKey("nextcloud_own_device", bool)


async def _authenticate(request: web.Request) -> None:
    header = request.headers.get("Authorization")
    if header is None:
        raise Unauthorized("send Basic credentials: your login name and an app password")
    name, password = basic_credentials(header)
    caller = login_caller(request, "nextcloud")
    login = await request.app[BASIC_AUTH].authenticate_basic(name, password, caller)
    request[NC_USER] = login.user
    if login.app_password is None:
        request[NC_DEVICE] = ACCOUNT_DEVICE
        request[NC_DEVICE_CAPTION] = ACCOUNT_DEVICE_CAPTION
        request[NC_OWN_DEVICE] = False
    else:
        request[NC_OWN_DEVICE] = True
        request[NC_DEVICE] = f"nextcloud-{login.app_password.id}"
        request[NC_DEVICE_CAPTION] = login.app_password.name


def nextcloud_route(handler: Handler, basic: bool = True) -> Handler:
    @functools.wraps(handler)
    async def nextcloud_handler(request: web.Request) -> web.StreamResponse:
        try:
            refuse_foreign_write(request)  # before the credentials: never a failed login
            if basic:
                try:
                    await _authenticate(request)
                except (Unauthorized, TooManyRequests) as exc:
                    await note_refusal(request, "nextcloud", None, exc)
                    raise
            response = await handler(request)
            if basic and response.status < 300:
                await request.app[SYNC_HEALTH].synced(request[NC_USER].id, request[NC_DEVICE])
        except (Unauthorized, Forbidden) as exc:
            response = basic_refusal(exc, CHALLENGE)
        response.headers["Cache-Control"] = "no-store"
        return response

    return checks_own_callers(nextcloud_handler)
