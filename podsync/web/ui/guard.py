"""The UI's rules around every handler: the session cookie, the CSRF token and the
Origin of every POST, and errors as HTML pages (the rest of podsync answers JSON).

A POST whose Origin is another site's, or whose form lacks the session's CSRF
token, is refused with 403 before its handler runs: nothing changes.
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from urllib.parse import quote, urlsplit

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from multidict import MultiDictProxy

from podsync.errors import InvalidInput, PodsyncError
from podsync.web.errors import answer_for, retry_after
from podsync.web.keys import CLIENT_ADDRESS, CONFIG, REQUEST_ID
from podsync.web.middleware import checks_own_callers, reads_own_forms
from podsync.web.ops.home import server_address
from podsync.web.ui.keys import INBOX, INBOX_COUNT, SIGNED_IN, WEB_SESSIONS
from podsync.web.ui.render import render

COOKIE = "podsync_ui"
COOKIE_PATH = "/ui"
CSRF_FIELD = "csrf"
FORM = web.RequestKey("ui_form", MultiDictProxy[str | bytes | bytearray | web.FileField])
CSRF_REFUSED = (
    "This form was not sent from a page of this server, or it has expired. "
    "Nothing was changed. Go back, reload the page and try again."
)

FORM_UNREADABLE = "The form could not be read. Nothing was changed."
# What aiohttp raises for a body that is not what its headers say: multipart with no
# boundary or a line too long, a Content-Encoding that does not decode, text that is
# not in its charset (UnicodeDecodeError, a ValueError); a charset no codec has, for
# the form or one of its parts (LookupError); a part's Content-Transfer-Encoding it
# does not know (RuntimeError). Caught around reading the form only.
FORM_READ_ERRORS = (
    ValueError,
    LookupError,
    RuntimeError,
    HttpProcessingError,
    web.RequestPayloadError,
)
# NUL and lone surrogates: no database stores them (PostgreSQL refuses NUL in text).
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
UNSTORABLE = "The form contained a character no field can hold (NUL). Nothing was changed."

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
log = logging.getLogger("podsync.ui")


class Refused(Exception):
    """A request the UI refuses with 403 before anything runs."""


def ui_route(
    handler: Handler,
    *,
    public: bool = False,
    admin: bool = False,
    reads_own_body: bool = False,
    no_count: bool = False,
) -> Handler:
    """Wrap a UI handler. `public`: no session needed (sign-in). `admin`: admins only.
    `reads_own_body`: a streamed upload that checks the CSRF token itself
    (`check_csrf`); every other POST has its form read and checked here."""

    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await _run(request, handler, public, admin, reads_own_body, no_count)
        except Refused as exc:
            return _error(request, 403, "Refused", str(exc))
        except PodsyncError as exc:
            answer = answer_for(exc)
            if answer is None or answer.page_heading is None:
                raise  # the middleware's answer: this protocol's page for the status
            response = _error(request, answer.status, answer.page_heading, str(exc))
            response.headers.update(retry_after(exc) or {})
            return response
        except web.HTTPRequestEntityTooLarge:
            limit = size_text(request.app[CONFIG].server.max_body_bytes)
            return _error(request, 413, "Too large", f"The form was larger than {limit}.")

    wrapped.__name__ = handler.__name__
    wrapped.__doc__ = handler.__doc__
    return reads_own_forms(checks_own_callers(wrapped))


async def _run(
    request: web.Request,
    handler: Handler,
    public: bool,
    admin: bool,
    reads_own_body: bool,
    no_count: bool = False,
) -> web.StreamResponse:
    token = request.cookies.get(COOKIE, "")
    signed_in = await request.app[WEB_SESSIONS].find(token) if token else None
    if signed_in is not None:
        request[SIGNED_IN] = signed_in
    if request.method == "POST":
        check_origin(request)
    if signed_in is None and not public:
        if request.method == "POST":
            raise Refused("Your session has ended; sign in again. Nothing was changed.")
        target = request.rel_url.path_qs
        redirect = web.HTTPSeeOther(
            "/ui/login" if target in ("/ui", "/ui/") else f"/ui/login?next={quote(target)}"
        )
        if token:  # a cookie of an ended session: forget it
            redirect.del_cookie(COOKIE, path=COOKIE_PATH)
        raise redirect
    if admin and (signed_in is None or not signed_in.user.admin):
        return _error(request, 403, "Admins only", "This page is for the server's admins.")
    if any(_UNSTORABLE.search(v) for v in request.query.values()):
        raise InvalidInput(UNSTORABLE)
    if request.method == "POST" and not reads_own_body:
        try:
            form = await request.post()
        except FORM_READ_ERRORS:
            raise InvalidInput(FORM_UNREADABLE) from None
        if not public:  # sign-in has no session yet: its Origin was checked above
            value = form.get(CSRF_FIELD)
            check_csrf(request, value if isinstance(value, str) else None)
        if any(isinstance(v, str) and _UNSTORABLE.search(v) for v in form.values()):
            raise InvalidInput(UNSTORABLE)
        request[FORM] = form
    if signed_in is not None and request.method == "GET" and not no_count:
        # The navigation's count of New episodes (the person's own feeds only).
        request[INBOX_COUNT] = await request.app[INBOX].count(signed_in.user)
    response = await handler(request)
    if token and signed_in is None:  # a cookie of an ended session: forget it
        response.del_cookie(COOKIE, path=COOKIE_PATH)
    return response


def check_origin(request: web.Request) -> None:
    """A POST must come from a page of this server: its Origin (when the browser
    sends one, as every current browser does on a form POST) is this server's."""
    origin = request.headers.get("Origin")
    # A sibling subdomain ("same-site") is another site's page too.
    if request.headers.get("Sec-Fetch-Site", "") in ("cross-site", "same-site"):
        raise Refused(CSRF_REFUSED)
    if origin is None:
        return
    own = {_origin_of(server_address(request)), f"{request.scheme}://{request.host}".lower()}
    if origin.lower() not in own:
        log.warning(
            "refused a form sent from another origin to %s from %s",
            request.path,
            request[CLIENT_ADDRESS],
        )
        raise Refused(CSRF_REFUSED)


def check_csrf(request: web.Request, value: str | None) -> None:
    signed_in = request.get(SIGNED_IN)
    expected = signed_in.session.csrf_token if signed_in is not None else None
    if (
        expected is None
        or value is None
        or not hmac.compare_digest(value.encode("utf-8", "replace"), expected.encode())
    ):
        raise Refused(CSRF_REFUSED)


def form_text(request: web.Request, name: str, limit: int = 4096) -> str:
    """A text field of the checked form ("" when absent or a file)."""
    value = request[FORM].get(name)
    return value[:limit] if isinstance(value, str) else ""


def _origin_of(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:  # scheme://host from a Host header urllib cannot read: no path
        return url.lower()
    return f"{parts.scheme}://{parts.netloc}".lower()


def cookie_is_secure(request: web.Request) -> bool:
    """Secure over HTTPS, or behind a trusted proxy that says it speaks HTTPS."""
    return request.secure or server_address(request).startswith("https://")


def size_text(limit: int) -> str:
    """A byte limit as people read it: "1 MiB", or bytes when not whole MiB."""
    mib, rest = divmod(limit, 1 << 20)
    return f"{mib} MiB" if mib and not rest else f"{limit} bytes"


def _error(request: web.Request, status: int, heading: str, message: str) -> web.Response:
    return render(
        request,
        "error.html",
        heading,
        status=status,
        message=message,
        request_id=request.get(REQUEST_ID, ""),
        back_href="/ui/",
        back_label="Back to the overview",
    )


def error_page(request: web.Request, status: int, heading: str, message: str) -> web.Response:
    return _error(request, status, heading, message)


# Headings of the page that answers an error the middleware met on a UI path
# (one no UI handler answered itself: a fault, a method the path does not take).
HEADINGS = {
    400: "Not accepted",
    403: "Refused",
    404: "Not found",
    405: "Not allowed",
    413: "Too large",
    429: "Too many attempts",
    503: "Try again in a moment",
}


def is_ui_path(path: str) -> bool:
    return path == "/ui" or path.startswith("/ui/")


def page_for_error(request: web.Request, status: int, description: str) -> web.Response | None:
    """The errors middleware's page for the UI's paths (web/keys.py ERROR_PAGE): the
    layout, the message and the request id, never the API's JSON."""
    if not is_ui_path(request.path):
        return None
    heading = HEADINGS.get(status, "Something went wrong")
    message = description[:1].upper() + description[1:]
    if not message.endswith("."):
        message += "."
    return _error(request, status, heading, message)
