"""Staying in place: every mark, dismiss and queue form names the page it came from
(`back`: its path, filter and page number, and the anchor of the row), and its
redirect returns there, with `done=` for the sentence that says what happened."""

from __future__ import annotations

import hashlib

from aiohttp import web

from podsync.web.ui.guard import form_text

# The pages a form may send the browser back to.
_PAGES = (
    "/ui/podcasts/",
    "/ui/episodes/",
    "/ui/search",
    "/ui/new",
    "/ui/up-next",
    "/ui/?",
    "/ui/#",
)


def row_anchor(guid: str | None, episode_url: str) -> str:
    """The id of an episode's row on any list: from its feed item (its guid, else
    its file), so that it stays the same once something is done with the episode
    (its page's id does not)."""
    digest = hashlib.sha256(f"{guid or ''}\n{episode_url}".encode()).hexdigest()[:16]
    return f"ep-{digest}"


def back_to(request: web.Request, default: str) -> str:
    """The form's `back` when it is one of the UI's own list pages, else `default`."""
    back = form_text(request, "back", 2048)
    ok = back.startswith(_PAGES) or back == "/ui/"
    if ok and "\\" not in back and "//" not in back and "\n" not in back:
        return back
    return default


def with_done(back: str, done: str) -> str:
    """`back` with `done=<done>` in its query, before any anchor."""
    path, hash_mark, anchor = back.partition("#")
    joined = f"{path}{'&' if '?' in path else '?'}done={done}"
    return f"{joined}{hash_mark}{anchor}"


def return_to(request: web.Request, default: str, done: str) -> web.HTTPSeeOther:
    return web.HTTPSeeOther(with_done(back_to(request, default), done))
