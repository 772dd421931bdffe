"""Rendering the UI's pages: the template environment, the headers every page
carries, and how times, titles and progress read for a person."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, tzinfo
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from aiohttp import web

from podsync import __version__, zones
from podsync.numbers import parse_int
from podsync.web.keys import CONFIG
from podsync.web.ui.keys import INBOX_COUNT, SIGNED_IN

if TYPE_CHECKING:
    import jinja2

# Nothing from other origins but audio: podsync serves the artwork itself
# (web/ui/artwork.py); script is its own files only (htmx and the player, no inline
# script, no eval), which talk to this server only. The audio comes from wherever the
# feed keeps it: any http(s) host, since a podcast's file is usually behind a
# redirect or two (a download counter, a CDN) and a redirect to a host the policy
# does not name would stop it. Every page has the same policy: a page reached by
# htmx keeps the policy of the page the browser loaded first, and the player plays
# on whichever page that is.
CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; media-src http: https:; "
    "style-src 'self'; img-src 'self' data:; manifest-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not no-referrer: with it a browser sends `Origin: null` on a form POST, and
    # the Origin is what the CSRF check compares.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
STATIC_CSS = "ui.css"
FAVICON_FILE = "favicon.ico"
# The UI's other constant files (served under /ui/static/, the file name in the
# address with the version as a query to bust caches): name, content type, charset.
STATIC_FILES = (
    ("player.js", "text/javascript", "utf-8"),
    ("htmx.min.js", "text/javascript", "utf-8"),
    ("manifest.webmanifest", "application/manifest+json", "utf-8"),
    ("icon.svg", "image/svg+xml", None),
    ("icon-192.png", "image/png", None),
    ("icon-512.png", "image/png", None),
)
NAV = (
    ("/ui/", "Overview"),
    ("/ui/new", "New episodes"),
    ("/ui/up-next", "Up next"),
    ("/ui/subscriptions", "Subscriptions"),
    ("/ui/search", "Search"),
    ("/ui/history", "Listening history"),
    ("/ui/stats", "Statistics"),
    ("/ui/devices", "Devices"),
    ("/ui/transfer", "Import and export"),
    ("/ui/account", "Account"),
)
ADMIN_NAV = (("/ui/admin/users", "Users"),)
# The navigation item a page belongs to, for pages that are not one themselves.
_NAV_OF = (
    ("/ui/podcasts/", "/ui/subscriptions"),
    ("/ui/episodes/", "/ui/subscriptions"),
    ("/ui/account/", "/ui/account"),
    ("/ui/admin/", "/ui/admin/users"),
)


def nav_current(path: str) -> str:
    """The navigation item to highlight on the page at `path`."""
    if path == "/ui":
        return "/ui/"
    for prefix, item in _NAV_OF:
        if path.startswith(prefix):
            return item
    return path


@cache
def environment() -> jinja2.Environment:
    """The template environment, made on the first page a browser asks for: a server
    whose UI nobody opens never imports Jinja2 (about 2 MiB of memory)."""
    import jinja2

    env = jinja2.Environment(
        # A directory, not PackageLoader: the frozen binary's importer has no
        # package resources API, but its files are on disk all the same.
        loader=jinja2.FileSystemLoader(str(_package_dir() / "templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # Templates are package data and never change under a running server: no
        # stat() per render to check.
        auto_reload=False,
    )
    env.filters["num"] = number
    env.filters["short"] = shortened
    return env


def number(value: int) -> str:
    """A count as people read it: 1,976 (the thousands separated)."""
    return f"{value:,}"


def shortened(text: str, limit: int) -> str:
    """A long address or user agent cut to `limit` characters with "…" (the page
    puts the whole in a `title`)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _package_dir() -> Path:
    return Path(__file__).resolve().parent


def static_file(name: str) -> bytes:
    return (_package_dir() / "static" / name).read_bytes()


def stylesheet() -> bytes:
    return static_file(STATIC_CSS)


def render(
    request: web.Request,
    template: str,
    heading: str,
    status: int = 200,
    **context: Any,
) -> web.Response:
    signed_in = request.get(SIGNED_IN)
    user = signed_in.user if signed_in is not None else None
    nav = NAV + ADMIN_NAV if user is not None and user.admin else NAV
    current = nav_current(request.path)
    page = (
        environment()
        .get_template(template)
        .render(
            {
                "heading": heading,
                "user": user,
                "csrf": signed_in.session.csrf_token if signed_in is not None else "",
                "nav": nav,
                "inbox_count": request.get(INBOX_COUNT),
                "current": current,
                "version": __version__,
                "zone_label": zone_name(user_zone(request)) if user is not None else "",
                "static_css": f"/ui/static/{STATIC_CSS}?v={__version__}",
                "notice": context.pop("notice", None),
                "errors": context.pop("errors", {}),
                **context,
            }
        )
    )
    response = web.Response(text=page, status=status, content_type="text/html", charset="utf-8")
    response.headers.update(PAGE_HEADERS)
    return response


def json_answer(status: int, **body: Any) -> web.Response:
    """An answer to the UI's script (JSON, never cached)."""
    response = web.json_response(body, status=status)
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def zone(name: str) -> tzinfo:
    """The zone of this name (UTC when there is none such: the configured one was
    checked at start, a person's when they chose it)."""
    return zones.zone(name) or UTC


def user_zone(request: web.Request) -> tzinfo:
    """The zone the signed-in person reads times in: their own (Account page), else
    the server's `ui.time_zone`."""
    signed_in = request.get(SIGNED_IN)
    own = signed_in.user.time_zone if signed_in is not None else None
    return zone(own or request.app[CONFIG].ui.time_zone)


def zone_name(tz: tzinfo) -> str:
    key = getattr(tz, "key", None)
    return str(key) if key else "UTC"


_DAYS = {0: "today", -1: "yesterday", 1: "tomorrow"}
# Today's date per zone, and until when (the monotonic second) it is worth asking
# the clock again: a page of 100 times asks it once.
_TODAY: dict[tzinfo, tuple[float, date]] = {}


def _today(tz: tzinfo) -> date:
    now = time.monotonic()
    known = _TODAY.get(tz)
    if known is not None and known[0] > now:
        return known[1]
    today = datetime.now(tz).date()
    if len(_TODAY) > 64:  # zones people chose: a handful
        _TODAY.clear()
    _TODAY[tz] = (now + 1.0, today)
    return today


class Moment:
    """A time as a page shows it, in the reader's zone: "today 19:49", "yesterday
    08:10", "tomorrow 07:00", else "2026-11-05 08:00"; `full` (a tooltip) always has
    the date and the zone, `iso` is for machines."""

    __slots__ = ("full", "iso", "text")

    def __init__(self, us: int, tz: tzinfo, now_us: int | None = None) -> None:
        at = datetime.fromtimestamp(us / 1_000_000, tz)
        today = _today(tz) if now_us is None else datetime.fromtimestamp(now_us / 1e6, tz).date()
        self.iso = at.isoformat(timespec="seconds")
        self.full = f"{at:%Y-%m-%d %H:%M} {at.tzname()}"
        day = _DAYS.get((at.date() - today).days)
        self.text = f"{day} {at:%H:%M}" if day else f"{at:%Y-%m-%d %H:%M}"


def host_and_path(url: str) -> str:
    """What to call a feed with no known title: its host and path (the URL itself
    when urllib cannot read it)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # brackets urllib refuses (Python releases differ): "http://h,[::1]/"
        return url
    path = unquote(parts.path).rstrip("/")
    return f"{parts.hostname or ''}{path}" or url


def file_name(url: str) -> str:
    """What to call an episode with no known title: its file name."""
    try:
        path = unquote(urlsplit(url).path).rstrip("/")
    except ValueError:  # as in host_and_path
        return url
    name = path.rsplit("/", 1)[-1]
    return name or host_and_path(url)


def duration(seconds: int) -> str:
    hours, rest = divmod(max(0, seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


NOTICES = {
    "subscribed": "Subscribed. Your apps get it at their next sync.",
    "unreachable": "Subscribed, but the feed could not be reached just now (why: below). "
    "podsync tries again later; your apps get it at their next sync all the same.",
    "already": "You were already subscribed to that feed.",
    "unsubscribed": "Unsubscribed. Your apps drop it at their next sync.",
    "resubscribed": "Subscribed again. Your apps get it at their next sync.",
    "renamed": "Device renamed.",
    "removed": "Device removed. Its listening history stays.",
    "refreshed": "Feed fetched.",
    "refresh_failed": "The feed could not be fetched: its page says why and when the next try is.",
    "refresh_wait": "This feed was fetched less than a minute ago; try again in a minute.",
    "refresh_off": "Feeds are not fetched on this server (feeds.fetch_metadata is off).",
    "played": "Marked played. Your apps get it at their next sync.",
    "unplayed": "Marked not played. Your apps get it at their next sync.",
    "continue_removed": "Removed from Continue listening (on podsync only: your apps see no "
    "change). It comes back if you play it again.",
    "queued": "Added to Up next.",
    "unqueued": "Removed from Up next.",
    "moved": "Up next reordered.",
    "autoplay_on": "The next episode in Up next plays when one ends.",
    "autoplay_off": "Playback stops at the end of each episode.",
    "dismissed": "Dismissed from New episodes (nothing changes in your apps).",
}


# A page past the end goes to the last page; past this one, to this one first (its
# offset stays far from what a 64-bit column holds).
MAX_PAGE = 1_000_000


def page_number(request: web.Request) -> int:
    """The `page` of the query, from 1 to MAX_PAGE; anything else is the first page."""
    page = parse_int(request.query.get("page", "1"), 1)
    return 1 if page is None else min(page, MAX_PAGE)


def notice(request: web.Request) -> str | None:
    """The sentence a page shows after a change (`?done=...` of the redirect, or
    `?marked=N&unknown=M` of a bulk mark)."""
    marked = request.query.get("marked", "")
    if marked.isascii() and marked.isdigit() and len(marked) < 8:
        text = f"{int(marked):,} marked played. Your apps get them at their next sync."
        unknown = request.query.get("unknown", "0")
        if unknown.isascii() and unknown.isdigit() and len(unknown) < 8 and int(unknown):
            text += (
                f" {int(unknown):,} left as they were: podsync does not know how long "
                "they are (their feeds do not say)."
            )
        return text
    return NOTICES.get(request.query.get("done", ""))


def shown_url(url: str | None) -> str | None:
    """A URL a page may link to: http or https only."""
    if not url:
        return None
    scheme = url.split(":", 1)[0].lower()
    return url if scheme in ("https", "http") else None
