"""Failed sign-ins as people see them (contract rev. 5). On the Overview, a person's
own: from which address their name is locked out, until when and why, whether the
name is guarded (too many guesses at it from all addresses: only the addresses it
signed in from lately may sign in), and Unlock (being signed in proves they know the
password). On the admin's user page, the
user's. Each row is one address: how many different wrong passwords (what the
lockout counts), how many tries in all, the last try's time, client, door and
reason (services/throttle.py keeps them per wrong password)."""

from __future__ import annotations

import logging
from datetime import tzinfo
from typing import Any

from aiohttp import web

from podsync.services.auth import loggable_name
from podsync.services.throttle import FailuresFrom
from podsync.web.keys import AUTH, CONFIG
from podsync.web.ui.keys import ACCOUNTS, SIGNED_IN
from podsync.web.ui.render import Moment, notice, user_zone

log = logging.getLogger("podsync.ui")
DOORS = {
    "opa": "Open Podcast API",
    "gpodder": "gpodder API",
    "nextcloud": "Nextcloud API",
    "web": "web UI",
}
REASONS = {
    "password": "wrong password",
    "app_password": "no such app password (revoked?)",
    "disabled": "account disabled",
}
UNLOCKED = "Unlocked: every app and browser may sign in as you again."


def window_words(seconds: int) -> str:
    minutes = max(1, round(seconds / 60))
    return "a minute" if minutes == 1 else f"{minutes} minutes"


def failure_rows(groups: list[FailuresFrom], tz: tzinfo) -> list[dict[str, Any]]:
    """What a page shows of each address's failures."""
    return [
        {
            "address": g.address,
            "distinct": g.distinct,
            "attempts": g.attempts,
            "first": Moment(min(f.first_at for f in g.failures), tz),
            "last": Moment(g.last.last_at, tz),
            "client": g.last.client,
            "door": DOORS.get(g.last.door, "an earlier release"),
            "reason": REASONS.get(g.last.reason, g.last.reason),
            "locked_until": Moment(g.locked_until, tz) if g.locked_until else None,
        }
        for g in groups
    ]


async def sign_in_failures(request: web.Request, name: str) -> dict[str, Any]:
    """The context a page needs to show `name`'s failed sign-ins, and whether the
    name is guarded (too many guesses at it from all addresses: services/throttle.py)."""
    config = request.app[CONFIG]
    throttle = request.app[AUTH].throttle
    groups = await throttle.failures_of(name)
    guard = await throttle.name_guard(name)
    tz = user_zone(request)
    return {
        "failures": failure_rows(groups, tz),
        "window": window_words(config.auth.login_lockout_seconds),
        "guard": guard,
        "guarded_until": Moment(guard.until, tz) if guard.until else None,
    }


async def overview_context(request: web.Request) -> dict[str, Any]:
    """The signed-in person's failed sign-ins, and the notice after an Unlock."""
    context = await sign_in_failures(request, request[SIGNED_IN].user.name)
    unlocked = request.query.get("done") == "unlocked"
    context["notice"] = UNLOCKED if unlocked else notice(request)
    return context


async def unlock_own_name(request: web.Request) -> web.Response:
    """Forget the person's failed sign-ins: a phone at home that was locked out with
    them may sign in again at once."""
    user = request[SIGNED_IN].user
    await request.app[ACCOUNTS].unlock(user.name)
    log.info("user %s cleared their own failed logins in the web UI", loggable_name(user.name))
    raise web.HTTPSeeOther("/ui/?done=unlocked")
