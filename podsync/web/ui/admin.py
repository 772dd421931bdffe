"""The admin's Users page: list, add, disable and enable, unlock, reset a
password, delete with a typed confirmation. Every change is a log line naming the
admin and the user, as the CLI's own are."""

from __future__ import annotations

import logging
from datetime import tzinfo
from urllib.parse import quote

from aiohttp import web

from podsync.errors import Conflict, InvalidInput, NotFound
from podsync.model import UserOverview
from podsync.services.accounts import check_username
from podsync.services.auth import loggable_name
from podsync.services.passwords import check_password_rules
from podsync.web.keys import CONFIG
from podsync.web.ui.app_passwords import PASSWORD_RULE
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import ACCOUNTS, SIGNED_IN
from podsync.web.ui.lockout import sign_in_failures
from podsync.web.ui.render import Moment, render, user_zone

log = logging.getLogger("podsync.admin")
NOTICES = {
    "added": "User added.",
    "disabled": "User disabled; their sessions and app logins ended.",
    "enabled": "User enabled.",
    "unlocked": "Failed sign-ins of the user forgotten.",
    "password": "Password reset; their sessions and app logins ended.",
    "deleted": "User deleted.",
}


def _notice(request: web.Request) -> str | None:
    return NOTICES.get(request.query.get("done", ""))


async def users(request: web.Request) -> web.Response:
    return await _users_page(request, {})


async def _users_page(
    request: web.Request,
    errors: dict[str, str],
    name: str = "",
    admin: bool = False,
    status: int = 200,
) -> web.Response:
    tz = user_zone(request)
    rows = await request.app[ACCOUNTS].admin_rows()
    return render(
        request,
        "users.html",
        "Users",
        status=status,
        errors=errors,
        notice=_notice(request) if not errors else None,
        name=name,
        admin=admin,
        password_rule=PASSWORD_RULE,
        rows=[_row(r, tz) for r in rows],
    )


def _row(r: UserOverview, tz: tzinfo) -> dict[str, object]:
    return {
        "name": r.name,
        "enabled": r.enabled,
        "admin": r.admin,
        "subscriptions": r.subscriptions,
        "devices": r.devices,
        "created": Moment(r.created_at, tz),
        "last_activity": Moment(r.last_activity, tz) if r.last_activity else None,
    }


async def add_user(request: web.Request) -> web.Response:
    admin_name = request[SIGNED_IN].user.name
    name = form_text(request, "name", 256).strip()
    password = form_text(request, "password", 4096)
    make_admin = form_text(request, "admin") == "1"
    errors = {}
    try:
        check_username(name)
    except InvalidInput:
        errors["name"] = "Use 1 to 64 characters of A-Z a-z 0-9 . _ -"
    try:
        check_password_rules(password)
    except InvalidInput as exc:
        errors["password"] = str(exc).capitalize() + "."
    if not errors:
        try:
            await request.app[ACCOUNTS].add_user(name, password, admin=make_admin)
        except Conflict as exc:
            errors["name"] = str(exc).capitalize() + "."
    if errors:
        return await _users_page(request, errors, name, make_admin, 400)
    log.info(
        "admin %s added user %s%s in the web UI",
        loggable_name(admin_name),
        loggable_name(name),
        " (an admin)" if make_admin else "",
    )
    raise web.HTTPSeeOther("/ui/admin/users?done=added")


async def user_page(request: web.Request) -> web.Response:
    return await _user_page(request, request.query.get("name", "")[:256], {})


async def _user_page(
    request: web.Request, name: str, errors: dict[str, str], status: int = 200
) -> web.Response:
    tz = user_zone(request)
    found = await request.app[ACCOUNTS].admin_row(name)
    if found is None:
        raise NotFound(f"There is no user named {name!r}.")
    return render(
        request,
        "user.html",
        f"User {name}",
        status=status,
        errors=errors,
        notice=_notice(request) if not errors else None,
        password_rule=PASSWORD_RULE,
        target=_row(found, tz),
        max_failures=request.app[CONFIG].auth.login_max_failures,
        **await sign_in_failures(request, name),
    )


def _back(name: str, done: str) -> web.HTTPSeeOther:
    return web.HTTPSeeOther(f"/ui/admin/user?name={quote(name)}&done={done}")


async def disable_user(request: web.Request) -> web.Response:
    return await _set_enabled(request, False)


async def enable_user(request: web.Request) -> web.Response:
    return await _set_enabled(request, True)


async def _set_enabled(request: web.Request, enabled: bool) -> web.Response:
    admin = request[SIGNED_IN].user
    name = form_text(request, "name", 256)
    if not enabled and name == admin.name:
        return await _user_page(
            request, name, {"state": "You cannot disable yourself here; use the CLI."}, 400
        )
    await request.app[ACCOUNTS].set_enabled(name, enabled)
    if enabled:
        log.info(
            "admin %s enabled user %s in the web UI", loggable_name(admin.name), loggable_name(name)
        )
    else:
        log.warning(
            "admin %s disabled user %s in the web UI",
            loggable_name(admin.name),
            loggable_name(name),
        )
    raise _back(name, "enabled" if enabled else "disabled")


async def unlock_user(request: web.Request) -> web.Response:
    admin = request[SIGNED_IN].user
    name = form_text(request, "name", 256)
    await request.app[ACCOUNTS].unlock(name)
    log.info(
        "admin %s cleared the failed logins of user %s in the web UI",
        loggable_name(admin.name),
        loggable_name(name),
    )
    raise _back(name, "unlocked")


async def reset_password(request: web.Request) -> web.Response:
    admin = request[SIGNED_IN].user
    name = form_text(request, "name", 256)
    password = form_text(request, "password", 4096)
    try:
        await request.app[ACCOUNTS].set_password(name, password)
    except InvalidInput as exc:
        return await _user_page(request, name, {"password": str(exc).capitalize() + "."}, 400)
    log.warning(
        "admin %s reset the password of user %s in the web UI",
        loggable_name(admin.name),
        loggable_name(name),
    )
    if name == admin.name:  # their own session ended with the others
        raise web.HTTPSeeOther("/ui/login?changed=1")
    raise _back(name, "password")


async def delete_user(request: web.Request) -> web.Response:
    admin = request[SIGNED_IN].user
    name = form_text(request, "name", 256)
    confirm = form_text(request, "confirm", 256).strip()
    if name == admin.name:
        return await _user_page(
            request, name, {"confirm": "You cannot delete yourself here; use the CLI."}, 400
        )
    if confirm != name:
        return await _user_page(
            request, name, {"confirm": f"Type {name} exactly to delete this user."}, 400
        )
    await request.app[ACCOUNTS].delete_user(name)
    log.warning(
        "admin %s deleted user %s in the web UI", loggable_name(admin.name), loggable_name(name)
    )
    raise web.HTTPSeeOther("/ui/admin/users?done=deleted")
