"""The Account page and its `App passwords` section: make one (its secret shown once,
on the answer to the form's POST and nowhere else), list them, revoke one after a
confirmation page.

The secret is in the body of the POST's answer only: never in a URL, a redirect or a
cookie, and the page is `no-store` as every UI page. Reloading that page sends the
form again, which finds the name taken and says so: the secret is never shown twice.
"""

from __future__ import annotations

import contextlib
import logging

from aiohttp import web

from podsync.errors import Conflict, InvalidInput, LimitExceeded, NotFound, Unauthorized
from podsync.model import AppPassword
from podsync.numbers import parse_int
from podsync.services.app_passwords import MAX_NAME_LENGTH
from podsync.services.auth import loggable_name
from podsync.services.passwords import MIN_PASSWORD_LENGTH
from podsync.web.keys import APP_PASSWORDS, CONFIG
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import SIGNED_IN
from podsync.web.ui.render import Moment, render, user_zone
from podsync.zones import zone_names

PASSWORD_RULE = f"At least {MIN_PASSWORD_LENGTH} characters."
NAME_HINT = "The app it is for, e.g. Kasts on the laptop."
ACCOUNT = "/ui/account"  # the menu marks it current on the pages here too
ACCOUNT_NOTICES = {
    "revoked": "App password revoked. The app using it must be given a new one.",
    "zone": "Time zone saved: every page shows times in it.",
}

log = logging.getLogger("podsync.ui")


def _rows(request: web.Request, found: list[AppPassword]) -> list[dict[str, object]]:
    tz = user_zone(request)
    return [
        {
            "id": p.id,
            "name": p.name,
            "created": Moment(p.created_at, tz),
            "last_used": None if p.last_used_at is None else Moment(p.last_used_at, tz),
        }
        for p in found
    ]


async def account_page(
    request: web.Request,
    errors: dict[str, str],
    status: int = 200,
    made: dict[str, str] | None = None,
    name_value: str = "",
    zone_value: str | None = None,
) -> web.Response:
    """The Account page; `made`: the name and secret of the app password just made;
    `zone_value`: the time zone as the refused form gave it."""
    user = request[SIGNED_IN].user
    found = await request.app[APP_PASSWORDS].list(user)
    said = ACCOUNT_NOTICES.get(request.query.get("done", "")) if request.method == "GET" else None
    return render(
        request,
        "account.html",
        "Account",
        status=status,
        errors=errors,
        notice=said,
        password_rule=PASSWORD_RULE,
        app_passwords=_rows(request, found),
        made=made,
        name_value=name_value,
        name_hint=NAME_HINT,
        name_max=MAX_NAME_LENGTH,
        zone_value=(user.time_zone or "") if zone_value is None else zone_value,
        server_zone=request.app[CONFIG].ui.time_zone,
        zone_names=zone_names(),
        current=ACCOUNT,
    )


async def create(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    name = form_text(request, "name", 4 * MAX_NAME_LENGTH)
    try:
        made, secret = await request.app[APP_PASSWORDS].create(user, name)
    except Conflict:
        taken = "You already have an app password with this name. Pick another name."
        return await account_page(request, {"name": taken}, 400, name_value=name)
    except (LimitExceeded, InvalidInput) as exc:
        return await account_page(request, {"name": _sentence(str(exc))}, 400, name_value=name)
    except Unauthorized:  # the logins ended since this request's session was read
        raise web.HTTPSeeOther("/ui/login") from None
    log.info("user %s made app password %d in the web UI", loggable_name(user.name), made.id)
    return await account_page(request, {}, made={"name": made.name, "secret": secret})


async def confirm_revoke(request: web.Request) -> web.Response:
    """The question before a revocation (a GET: it changes nothing)."""
    found = await _named(request, request.query.get("id", ""))
    return render(
        request,
        "revoke.html",
        "Revoke app password",
        app_password=_rows(request, [found])[0],
        current=ACCOUNT,
    )


async def revoke(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    found = await _named(request, form_text(request, "id", 32))
    # Revoked meanwhile (another tab, the CLI): the same end.
    with contextlib.suppress(NotFound):
        await request.app[APP_PASSWORDS].revoke(user, str(found.id))
    log.info("user %s revoked app password %d in the web UI", loggable_name(user.name), found.id)
    raise web.HTTPSeeOther("/ui/account?done=revoked")


async def _named(request: web.Request, value: str) -> AppPassword:
    """The signed-in user's app password with this id; NotFound (a 404 page) if none."""
    wanted = parse_int(value, 1)
    if wanted is not None:
        for p in await request.app[APP_PASSWORDS].list(request[SIGNED_IN].user):
            if p.id == wanted:
                return p
    raise NotFound("You have no such app password; it may have been revoked already.")


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:] + ("" if message.endswith(".") else ".")
