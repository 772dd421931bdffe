"""The signed-in user's pages: overview, subscriptions, listening history, devices."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from aiohttp import web

from podsync.config import GpodderConfig
from podsync.errors import InvalidInput
from podsync.services.feed_info import EpisodeRef
from podsync.web.home import server_address
from podsync.web.keys import CONFIG, FEED_INFO
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import BROWSE, SIGNED_IN
from podsync.web.ui.render import Moment, duration, file_name, host_and_path, render, zone

PAGE_SIZE = 50
MAX_SEARCH = 200
NOTICES = {
    "subscribed": "Subscribed. Your apps get it at their next sync.",
    "already": "You were already subscribed to that feed.",
    "unsubscribed": "Unsubscribed. Your apps drop it at their next sync.",
    "resubscribed": "Subscribed again. Your apps get it at their next sync.",
    "renamed": "Device renamed.",
    "removed": "Device removed. Its listening history stays.",
}


@dataclass(frozen=True, slots=True)
class SubscriptionItem:
    sync_id: str
    feed_url: str
    title: str
    initial: str
    artwork: str | None
    link: str | None
    fetch_error: str | None
    subscribed: bool
    since: Moment


@dataclass(frozen=True, slots=True)
class HistoryItem:
    episode: str
    podcast: str
    action: str
    action_label: str
    progress: int | None
    position: int
    total: int
    progress_text: str
    device: str | None
    at: Moment


ACTION_LABELS = {
    "play": "Played",
    "download": "Downloaded",
    "delete": "Deleted",
    "new": "Marked new",
    "flattr": "Flattr",
}


def notice(request: web.Request) -> str | None:
    return NOTICES.get(request.query.get("done", ""))


async def overview(request: web.Request) -> web.Response:
    signed_in = request[SIGNED_IN]
    tz = zone(request.app[CONFIG].ui.time_zone)
    summary = await request.app[BROWSE].overview(signed_in.user)
    gpodder: GpodderConfig = request.app[CONFIG].gpodder
    return render(
        request,
        "overview.html",
        "Overview",
        subscribed=summary.subscribed,
        history_count=summary.history_count,
        devices=[
            {"caption": d.caption, "type": d.type, "last_seen": Moment(d.last_seen_at, tz)}
            for d in summary.devices
        ],
        address=server_address(request),
        gpodder_enabled=gpodder.enabled,
    )


def _page_number(request: web.Request) -> int:
    raw = request.query.get("page", "1")
    return int(raw) if raw.isdigit() and 0 < len(raw) < 7 and int(raw) > 0 else 1


async def subscriptions(request: web.Request) -> web.Response:
    return await _subscriptions_page(request)


async def _subscriptions_page(
    request: web.Request,
    errors: dict[str, str] | None = None,
    feed_url: str = "",
    status: int = 200,
) -> web.Response:
    user = request[SIGNED_IN].user
    tz = zone(request.app[CONFIG].ui.time_zone)
    q = request.query.get("q", "").strip()[:MAX_SEARCH]
    show_all = request.query.get("all") == "1"
    page = _page_number(request)
    found = await request.app[BROWSE].subscriptions(
        user, q, show_all, (page - 1) * PAGE_SIZE, PAGE_SIZE
    )
    pages = max(1, -(-found.total // PAGE_SIZE))

    def href(number: int) -> str:
        query = {k: v for k, v in (("q", q), ("all", "1" if show_all else "")) if v}
        if number > 1:
            query["page"] = str(number)
        return "/ui/subscriptions" + ("?" + urlencode(query) if query else "")

    infos = await request.app[FEED_INFO].for_feeds(s.feed_url for s in found.rows)
    rows = []
    for s in found.rows:
        info = infos.get(s.feed_url)
        # The user's own title (an OPML import) first, then the one the fetcher learned.
        title = s.title or (info.title if info else None) or host_and_path(s.feed_url)
        rows.append(
            SubscriptionItem(
                sync_id=s.sync_id,
                feed_url=s.feed_url,
                title=title,
                initial=title[:1],
                artwork=_shown_url(info.artwork_url if info else None, images=True),
                link=_shown_url(info.link if info else None),
                fetch_error=info.last_error if info else None,
                subscribed=s.unsubscribed_at is None,
                since=Moment(s.unsubscribed_at or s.subscribed_at, tz),
            )
        )
    noun = "subscription" if found.total == 1 else "subscriptions"
    kind = "" if show_all else "current "
    summary = (
        f"{found.total} {kind}{noun}" + (f" matching “{q}”" if q else "")
        if found.total
        else ("Nothing matches your search." if q else "No subscriptions yet: add a feed above.")
    )
    return render(
        request,
        "subscriptions.html",
        "Subscriptions",
        status=status,
        errors=errors or {},
        notice=notice(request) if not errors else None,
        feed_url=feed_url,
        q=q,
        show_all=show_all,
        rows=rows,
        summary=summary,
        back=href(page),
        page_label=f"Page {page} of {pages}" if pages > 1 else "",
        prev_href=href(page - 1) if page > 1 else None,
        next_href=href(page + 1) if page < pages else None,
    )


async def subscribe(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    feed_url = form_text(request, "feed_url", 4096).strip()
    if not feed_url:
        return await _subscriptions_page(
            request, {"feed_url": "Enter the address of a podcast feed."}, feed_url, 400
        )
    try:
        new = await request.app[BROWSE].subscribe(user, feed_url)
    except InvalidInput as exc:
        return await _subscriptions_page(request, {"feed_url": _sentence(str(exc))}, feed_url, 400)
    raise web.HTTPSeeOther("/ui/subscriptions?done=" + ("subscribed" if new else "already"))


def _back(request: web.Request) -> str:
    back = form_text(request, "back", 1024)
    return (
        back if back.startswith("/ui/subscriptions") and "\\" not in back else "/ui/subscriptions"
    )


async def unsubscribe(request: web.Request) -> web.Response:
    await request.app[BROWSE].set_subscribed(
        request[SIGNED_IN].user, form_text(request, "sync_id", 64), False
    )
    raise web.HTTPSeeOther(_with_notice(_back(request), "unsubscribed"))


async def resubscribe(request: web.Request) -> web.Response:
    await request.app[BROWSE].set_subscribed(
        request[SIGNED_IN].user, form_text(request, "sync_id", 64), True
    )
    raise web.HTTPSeeOther(_with_notice(_back(request), "resubscribed"))


def _shown_url(url: str | None, images: bool = False) -> str | None:
    """A URL a page may link to or load: https (the CSP allows images from https: only),
    or http for a plain link."""
    if not url:
        return None
    scheme = url.split(":", 1)[0].lower()
    return url if scheme == "https" or (scheme == "http" and not images) else None


def _with_notice(path: str, code: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}done={code}"


def _sentence(reason: str) -> str:
    """A rules reason ("feed_url must be ...") as a sentence next to the field."""
    text = (
        reason.replace("feed_url", "The feed URL", 1) if reason.startswith("feed_url") else reason
    )
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def _int_param(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name, "")
    return int(raw) if raw.isdigit() and len(raw) < 19 else None


async def history(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    browse = request.app[BROWSE]
    tz = zone(request.app[CONFIG].ui.time_zone)
    podcast = request.query.get("podcast", "")[:4096]
    device = request.query.get("device", "")[:64]
    podcasts, device_list = await browse.history_filters(user)
    page = await browse.history(
        user,
        podcast or None,
        device or None,
        _int_param(request, "before"),
        _int_param(request, "after"),
    )
    captions = {d.device_id: d.caption for d in device_list}
    feed_info = request.app[FEED_INFO]
    refs = {a.seq: EpisodeRef(a.podcast_url, a.episode_url, a.guid) for a in page.rows}
    episode_titles = await feed_info.episode_titles(refs.values())
    podcast_titles = await feed_info.titles(
        {a.podcast_url for a in page.rows} | {url for _, url, _ in podcasts}
    )
    rows = []
    for a in page.rows:
        progress = None
        if a.action == "play" and a.position is not None and a.total:
            progress = min(100, round(a.position * 100 / a.total))
        rows.append(
            HistoryItem(
                episode=episode_titles.get(refs[a.seq]) or file_name(a.episode_url),
                podcast=a.podcast_title
                or podcast_titles.get(a.podcast_url)
                or host_and_path(a.podcast_url),
                action=a.action,
                action_label=ACTION_LABELS.get(a.action, a.action),
                progress=progress,
                position=min(a.position or 0, a.total or 0),
                total=a.total or 0,
                progress_text=(
                    f"{duration(a.position or 0)} of {duration(a.total or 0)} ({progress}%)"
                    if progress is not None
                    else ""
                ),
                device=captions.get(a.device_id or "", a.device_id),
                at=Moment(a.occurred_at, tz),
            )
        )
    base = {k: v for k, v in (("podcast", podcast), ("device", device)) if v}

    def href(**extra: int) -> str:
        query = {**base, **{k: str(v) for k, v in extra.items()}}
        return "/ui/history" + ("?" + urlencode(query) if query else "")

    podcast_options = sorted(
        (
            (key, title or podcast_titles.get(url) or host_and_path(url))
            for key, url, title in podcasts
        ),
        key=lambda option: option[1].lower(),
    )
    return render(
        request,
        "history.html",
        "Listening history",
        zone=_zone_name(tz),
        podcasts=podcast_options,
        podcast=podcast,
        device_options=[(d.device_id, d.caption) for d in device_list],
        device=device,
        rows=rows,
        prev_href=href(after=page.newer_than) if page.newer_than is not None else None,
        next_href=href(before=page.older_than) if page.older_than is not None else None,
    )


def _zone_name(tz: object) -> str:
    key = getattr(tz, "key", None)
    return str(key) if key else "UTC"


async def devices(request: web.Request) -> web.Response:
    return await _devices_page(request)


async def _devices_page(
    request: web.Request,
    errors: dict[str, str] | None = None,
    captions: dict[str, str] | None = None,
    status: int = 200,
) -> web.Response:
    user = request[SIGNED_IN].user
    tz = zone(request.app[CONFIG].ui.time_zone)
    device_list, subscribed = await request.app[BROWSE].devices(user)
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
            }
            for d in device_list
        ],
    )


async def rename_device(request: web.Request) -> web.Response:
    device_id = form_text(request, "device", 64)
    caption = form_text(request, "caption", 1024)
    try:
        await request.app[BROWSE].rename_device(request[SIGNED_IN].user, device_id, caption)
    except InvalidInput as exc:
        return await _devices_page(
            request, {device_id: _sentence(str(exc))}, {device_id: caption}, 400
        )
    raise web.HTTPSeeOther("/ui/devices?done=renamed")


async def remove_device(request: web.Request) -> web.Response:
    await request.app[BROWSE].remove_device(
        request[SIGNED_IN].user, form_text(request, "device", 64)
    )
    raise web.HTTPSeeOther("/ui/devices?done=removed")
