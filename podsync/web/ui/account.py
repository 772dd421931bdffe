"""Sign-in and sign-out, the account page, OPML import and export."""

from __future__ import annotations

import asyncio
import json
import logging

from aiohttp import BodyPartReader, web

from podsync.errors import InvalidInput, TooManyRequests, Unauthorized, Unavailable
from podsync.opml import OpmlError, parse_opml
from podsync.services.auth import loggable_name
from podsync.services.browsing import plain_reason
from podsync.services.opml_io import ImportReport
from podsync.services.passwords import MIN_PASSWORD_LENGTH
from podsync.timestamps import now_us
from podsync.web.http import login_caller, stream_chunks
from podsync.web.keys import CONFIG
from podsync.web.ui.app_passwords import account_page
from podsync.web.ui.guard import (
    COOKIE,
    COOKIE_PATH,
    CSRF_FIELD,
    FORM_READ_ERRORS,
    FORM_UNREADABLE,
    check_csrf,
    cookie_is_secure,
    form_text,
)
from podsync.web.ui.keys import OPML, SIGNED_IN, WEB_SESSIONS
from podsync.web.ui.render import render
from podsync.web.ui.time_zone import refused_zone
from podsync.web.ui.transfer import UPLOAD_MAX_MIB, transfer_page

UPLOAD_MAX = UPLOAD_MAX_MIB * 1024 * 1024
# Past the cap the rest of an upload is read and dropped (so the browser gets the
# page, not a reset connection), but only up to here; beyond it reading stops. The
# answer is the same 413 page either way: it names the cap people see, 10 MiB.
DRAIN_MAX = 128 * 1024 * 1024

LOGIN_NOTICES = {
    "signed_out": "You are signed out.",
    "changed": "Password changed. Sign in with the new one; your apps need it too.",
    "everywhere": "Signed out everywhere: every browser and app must sign in again.",
}

log = logging.getLogger("podsync.ui")
REPORT_ROWS = 200  # feeds listed per part of the import report (the counts are whole)


def lockout_message(retry_after: int) -> str:
    """The throttle's refusal in words: when to try again, and who can help sooner."""
    minutes = max(1, -(-retry_after // 60))
    when = "in a minute" if minutes == 1 else f"in {minutes} minutes"
    return (
        "Too many failed sign-ins for this account or from this address. "
        f"Try again {when}, or ask an admin of this server to unlock the account. "
        "Still signed in on another device? Its Overview page can unlock it."
    )


def _safe_next(value: str) -> str:
    ok = value.startswith("/ui/") and not value.startswith("//") and "\\" not in value
    return value if ok and len(value) < 2048 else "/ui/"


async def login_form(request: web.Request) -> web.Response:
    if SIGNED_IN in request:
        raise web.HTTPSeeOther("/ui/")
    said = next((text for key, text in LOGIN_NOTICES.items() if key in request.query), None)
    return _login_page(request, {}, "", _safe_next(request.query.get("next", "")), notice=said)


def _login_page(
    request: web.Request,
    errors: dict[str, str],
    username: str,
    next_path: str,
    form_error: str | None = None,
    status: int = 200,
    notice: str | None = None,
) -> web.Response:
    return render(
        request,
        "login.html",
        "Sign in",
        status=status,
        errors=errors,
        username=username,
        next=next_path if next_path != "/ui/" else "",
        form_error=form_error,
        notice=notice,
    )


async def login(request: web.Request) -> web.Response:
    username = form_text(request, "username", 256)
    password = form_text(request, "password", 4096)
    next_path = _safe_next(form_text(request, "next", 2048))
    errors = {}
    if not username:
        errors["username"] = "Enter your username."
    if not password:
        errors["password"] = "Enter your password."  # noqa: S105 - a message
    if errors:
        return _login_page(request, errors, username, next_path, status=400)
    try:
        token = await request.app[WEB_SESSIONS].sign_in(
            username, password, login_caller(request, "web")
        )
    except Unauthorized:
        return _login_page(
            request, {}, username, next_path, "Username or password is incorrect.", 401
        )
    except TooManyRequests as exc:
        response = _login_page(
            request,
            {},
            username,
            next_path,
            lockout_message(exc.retry_after),
            429,
        )
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    except Unavailable as exc:
        response = _login_page(request, {}, username, next_path, exc.reason, 503)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response
    response = web.HTTPSeeOther(next_path)
    response.set_cookie(
        COOKIE,
        token,
        path=COOKIE_PATH,
        httponly=True,
        samesite="Strict",
        secure=cookie_is_secure(request),
        max_age=request.app[CONFIG].ui.session_lifetime,
    )
    raise response


async def logout(request: web.Request) -> web.Response:
    await request.app[WEB_SESSIONS].sign_out(request[SIGNED_IN].session)
    response = web.HTTPSeeOther("/ui/login?signed_out=1")
    response.del_cookie(COOKIE, path=COOKIE_PATH)
    raise response


async def account(request: web.Request) -> web.Response:
    errors, zone_value = refused_zone(request)
    return await account_page(request, errors, zone_value=zone_value)


async def change_password(request: web.Request) -> web.Response:
    signed_in = request[SIGNED_IN]
    current = form_text(request, "current", 4096)
    new = form_text(request, "new", 4096)
    again = form_text(request, "again", 4096)
    errors = {}
    if not current:
        errors["current"] = "Enter your current password."
    if len(new) < MIN_PASSWORD_LENGTH:
        errors["new"] = f"Use at least {MIN_PASSWORD_LENGTH} characters."
    elif new != again:
        errors["again"] = "The two new passwords differ."
    if errors:
        return await account_page(request, errors, 400)
    try:
        await request.app[WEB_SESSIONS].change_password(
            signed_in.user, current, new, login_caller(request, "web")
        )
    except Unauthorized:
        return await account_page(request, {"current": "This is not your current password."}, 400)
    except InvalidInput as exc:
        return await account_page(request, {"new": str(exc)}, 400)
    log.info("user %s changed their password in the web UI", loggable_name(signed_in.user.name))
    response = web.HTTPSeeOther("/ui/login?changed=1")
    response.del_cookie(COOKIE, path=COOKIE_PATH)
    raise response


async def logout_everywhere(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    await request.app[WEB_SESSIONS].sign_out_everywhere(user)
    log.info("user %s signed out everywhere from the web UI", loggable_name(user.name))
    response = web.HTTPSeeOther("/ui/login?everywhere=1")
    response.del_cookie(COOKIE, path=COOKIE_PATH)
    raise response


def _report_json(report: ImportReport) -> str:
    """What the report page shows, by feed: the names the file gave (else the URL),
    the reasons in plain words, at most REPORT_ROWS of each part."""

    def named(feeds: list[tuple[str, str | None]]) -> list[dict[str, str]]:
        return [{"url": url, "title": title or ""} for url, title in feeds[:REPORT_ROWS]]

    return json.dumps(
        {
            "added": report.added,
            "resubscribed": report.resubscribed,
            "already_subscribed": report.already_subscribed,
            "skipped_count": len(report.skipped),
            "added_feeds": named(report.added_feeds),
            "resubscribed_feeds": named(report.resubscribed_feeds),
            "already_feeds": named(report.already_feeds),
            "skipped": [
                {"url": s.url, "reason": plain_reason(s.reason)}
                for s in report.skipped[:REPORT_ROWS]
            ],
        }
    )


class UploadTooLarge(Exception):
    pass


async def _read_upload(request: web.Request) -> tuple[str | None, bytes | None]:
    """(csrf field, file bytes) of the multipart form, reading at most UPLOAD_MAX of
    the file; UploadTooLarge past it (after reading the rest, up to DRAIN_MAX: past
    that, at once)."""
    if not request.content_type.startswith("multipart/form-data"):
        raise InvalidInput("send the form as multipart/form-data")
    csrf: str | None = None
    data: bytes | None = None
    too_large = drained = False
    seen = 0
    try:
        reader = await request.multipart()
        while not drained and (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                raise InvalidInput(FORM_UNREADABLE)
            buffer = bytearray()
            cap = 4096 if part.name == CSRF_FIELD else UPLOAD_MAX
            while chunk := await part.read_chunk(65536):
                seen += len(chunk)
                if seen > DRAIN_MAX:
                    too_large = drained = True
                    break
                if len(buffer) + len(chunk) > cap:
                    too_large = too_large or part.name == "opml"
                    continue
                buffer += chunk
            if part.name == CSRF_FIELD:
                csrf = buffer.decode("utf-8", "replace")
            elif part.name == "opml" and not too_large:
                data = bytes(buffer)
    except (*FORM_READ_ERRORS, AssertionError):
        raise InvalidInput(FORM_UNREADABLE) from None
    if too_large:
        check_csrf(request, csrf)
        raise UploadTooLarge
    return csrf, data


async def import_opml(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    try:
        csrf, data = await _read_upload(request)
    except UploadTooLarge:
        return await transfer_page(
            request,
            {"opml": f"The file is larger than {UPLOAD_MAX_MIB} MiB; nothing imported."},
            status=413,
        )
    check_csrf(request, csrf)
    if not data:
        return await transfer_page(request, {"opml": "Choose an OPML file to import."}, status=400)
    service = request.app[OPML]
    now = now_us()

    def parse_and_plan() -> object:
        return service.plan(parse_opml(data), now)

    try:
        # Parsing and checking a big file takes a while: not on the event loop.
        plan = await asyncio.to_thread(parse_and_plan)
    except OpmlError as exc:
        return await transfer_page(
            request, {"opml": f"This is not an OPML file ({exc}); nothing imported."}, status=400
        )
    report = await service.apply(user, plan, now)  # type: ignore[arg-type]
    log.info(
        "user %s imported OPML in the web UI: %d added, %d subscribed again, "
        "%d already there, %d skipped",
        loggable_name(user.name),
        report.added,
        report.resubscribed,
        report.already_subscribed,
        len(report.skipped),
    )
    await request.app[WEB_SESSIONS].keep_import_report(
        request[SIGNED_IN].session, _report_json(report)
    )
    raise web.HTTPSeeOther("/ui/transfer?done=imported")


async def export_opml(request: web.Request) -> web.StreamResponse:
    user = request[SIGNED_IN].user
    include_unsubscribed = request.query.get("all") == "1"
    response = web.StreamResponse(
        headers={
            "Content-Disposition": 'attachment; filename="podsync-subscriptions.opml"',
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        }
    )
    response.content_type = "text/x-opml"
    response.charset = "utf-8"
    chunks = request.app[OPML].export_chunks(user, include_unsubscribed)
    return await stream_chunks(request, response, chunks)
