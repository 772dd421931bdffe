"""The signed-in user's overview and subscriptions: list, sort, add, refresh,
unsubscribe (after a confirmation) and subscribe again."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from aiohttp import web

from podsync.config import GpodderConfig
from podsync.errors import InvalidInput, TooManyRequests
from podsync.feeds import url_key
from podsync.numbers import parse_int
from podsync.store.browse import SUBSCRIPTION_ORDERS
from podsync.web.keys import CONFIG, FEED_INFO, SYNC_HEALTH
from podsync.web.ops.home import is_loopback, server_address
from podsync.web.ui.artwork import artwork_path
from podsync.web.ui.devices import refused_row
from podsync.web.ui.guard import form_text
from podsync.web.ui.keys import BROWSE, INBOX, LISTENING, SIGNED_IN
from podsync.web.ui.listening import history_items
from podsync.web.ui.lockout import overview_context
from podsync.web.ui.player import continue_items
from podsync.web.ui.render import (
    MAX_PAGE,
    Moment,
    host_and_path,
    notice,
    page_number,
    render,
    user_zone,
)

PAGE_SIZE = 50
MAX_SEARCH = 200
ORDER_LABELS = {"title": "Title (A-Z)", "added": "Recently added", "played": "Recently played"}
assert set(ORDER_LABELS) == set(SUBSCRIPTION_ORDERS)


@dataclass(frozen=True, slots=True)
class SubscriptionItem:
    sync_id: str
    feed_url: str
    title: str
    initial: str
    artwork: str | None
    subscribed: bool
    since: Moment
    fetched: bool  # the fetcher has read the feed at least once
    newest: Moment | None = None  # its newest episode's date
    unplayed: int | None = None  # the feed's episodes never played (None: not fetched)


async def overview(request: web.Request) -> web.Response:
    signed_in = request[SIGNED_IN]
    tz = user_zone(request)
    summary = await request.app[BROWSE].overview(signed_in.user)
    asked = parse_int(request.query.get("continue", "1"), 1) or 1
    continue_page = min(max(1, asked), MAX_PAGE)
    listening = await request.app[LISTENING].continue_listening(signed_in.user, continue_page)
    captions = {d.device_id: d.caption for d in summary.devices}
    health = await request.app[SYNC_HEALTH].of(signed_in.user)
    gpodder: GpodderConfig = request.app[CONFIG].gpodder
    address = server_address(request)
    return render(
        request,
        "overview.html",
        "Overview",
        subscribed=summary.subscribed,
        history_count=summary.history_count,
        in_progress=await continue_items(request, listening.in_progress, captions, tz),
        continue_prev=_continue_href(continue_page - 1) if continue_page > 1 else None,
        continue_next=_continue_href(continue_page + 1) if listening.more else None,
        continue_page=continue_page,
        finished=await history_items(request, listening.finished, captions, tz),
        devices=[
            {
                "caption": d.caption,
                "type": d.type,
                "last_seen": Moment(d.last_seen_at, tz),
                "refused": refused_row(health.devices.get(d.device_id), d.last_seen_at, tz),
            }
            for d in summary.devices
        ],
        address=address,
        loopback=is_loopback(address),
        plain_http=address.lower().startswith("http://"),
        gpodder_enabled=gpodder.enabled,
        **await overview_context(request),
    )


def _continue_href(page: int) -> str:
    return ("/ui/" if page <= 1 else f"/ui/?continue={page}") + "#h-continue"


async def subscriptions(request: web.Request) -> web.Response:
    return await _subscriptions_page(request)


async def _subscriptions_page(
    request: web.Request,
    errors: dict[str, str] | None = None,
    feed_url: str = "",
    status: int = 200,
) -> web.Response:
    user = request[SIGNED_IN].user
    tz = user_zone(request)
    q = request.query.get("q", "").strip()[:MAX_SEARCH]
    show_all = request.query.get("all") == "1"
    order = request.query.get("sort", "title")
    if order not in ORDER_LABELS:
        order = "title"
    page = page_number(request)
    found = await request.app[BROWSE].subscriptions(
        user, q, show_all, (page - 1) * PAGE_SIZE, PAGE_SIZE, order
    )
    pages = max(1, -(-found.total // PAGE_SIZE))

    def href(number: int) -> str:
        query = {
            k: v
            for k, v in (
                ("q", q),
                ("all", "1" if show_all else ""),
                ("sort", order if order != "title" else ""),
            )
            if v
        }
        if number > 1:
            query["page"] = str(number)
        return "/ui/subscriptions" + ("?" + urlencode(query) if query else "")

    if page > pages and request.method == "GET":
        raise web.HTTPFound(href(pages))  # past the end: the last page
    infos = await request.app[FEED_INFO].for_feeds(s.feed_url for s in found.rows)
    keys = {s.feed_url: url_key(s.feed_url) for s in found.rows}
    summaries = await request.app[INBOX].summaries(user, sorted(set(keys.values())))
    rows = []
    for s in found.rows:
        info = infos.get(s.feed_url)
        feed_summary = summaries.get(keys[s.feed_url])
        # The user's own title (an OPML import) first, then the one the fetcher learned.
        title = s.title or (info.title if info else None) or host_and_path(s.feed_url)
        rows.append(
            SubscriptionItem(
                sync_id=s.sync_id,
                feed_url=s.feed_url,
                title=title,
                initial=title[:1],
                artwork=artwork_path(info.artwork_hash if info else None),
                subscribed=s.unsubscribed_at is None,
                since=Moment(s.unsubscribed_at or s.subscribed_at, tz),
                fetched=bool(info and info.fetched_at),
                newest=(
                    Moment(feed_summary.newest, tz)
                    if feed_summary is not None and feed_summary.newest is not None
                    else None
                ),
                unplayed=feed_summary.unplayed if feed_summary is not None else None,
            )
        )
    noun = "subscription" if found.total == 1 else "subscriptions"
    kind = "" if show_all else "current "
    summary = (
        f"{found.total:,} {kind}{noun}" + (f" matching “{q}”" if q else "")
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
        order=order,
        orders=ORDER_LABELS,
        fetching=request.app[FEED_INFO].enabled,
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
        subscribed = await request.app[BROWSE].subscribe(user, feed_url)
    except InvalidInput as exc:
        return await _subscriptions_page(request, {"feed_url": str(exc)}, feed_url, 400)
    except TooManyRequests as exc:  # the feed, or this user's checks, fetched enough
        page = await _subscriptions_page(request, {"feed_url": str(exc)}, feed_url, 429)
        page.headers["Retry-After"] = str(exc.retry_after)
        return page
    if subscribed.unreachable is not None and subscribed.sync_id is not None:
        # Said at once, on the podcast's page: why, and when the next try is.
        raise web.HTTPSeeOther(f"/ui/podcasts/{subscribed.sync_id}?done=unreachable")
    done = "subscribed" if subscribed.new else "already"
    raise web.HTTPSeeOther("/ui/subscriptions?done=" + done)


def _back(request: web.Request) -> str:
    """Where a form's page sends the browser back to: the list it came from, or a
    podcast's page (never anywhere else)."""
    back = form_text(request, "back", 1024)
    ok = back.startswith(("/ui/subscriptions", "/ui/podcasts/")) and "\\" not in back
    return back if ok and "//" not in back else "/ui/subscriptions"


async def unsubscribe(request: web.Request) -> web.Response:
    """The first press asks (a page with the consequence and two buttons); the
    confirmation unsubscribes."""
    user = request[SIGNED_IN].user
    sync_id = form_text(request, "sync_id", 64)
    if form_text(request, "confirm", 8) != "yes":
        entity = await request.app[BROWSE].subscription(user, sync_id)
        info = (await request.app[FEED_INFO].for_feeds([entity.feed_url])).get(entity.feed_url)
        title = entity.title or (info.title if info else None) or host_and_path(entity.feed_url)
        return render(
            request,
            "confirm.html",
            "Unsubscribe?",
            question=f"Unsubscribe from “{title}”?",
            consequence="Every app of yours drops it at its next sync. Your listening "
            "history of it stays, and you can subscribe again later.",
            action="/ui/subscriptions/unsubscribe",
            fields={"sync_id": entity.sync_id, "back": _back(request)},
            button="Unsubscribe",
            cancel=_back(request),
        )
    await request.app[BROWSE].set_subscribed(user, sync_id, False)
    raise web.HTTPSeeOther(_with_notice(_back(request), "unsubscribed"))


async def resubscribe(request: web.Request) -> web.Response:
    await request.app[BROWSE].set_subscribed(
        request[SIGNED_IN].user, form_text(request, "sync_id", 64), True
    )
    raise web.HTTPSeeOther(_with_notice(_back(request), "resubscribed"))


async def refresh(request: web.Request) -> web.Response:
    """Fetch one feed now (rate-limited per feed)."""
    user = request[SIGNED_IN].user
    sync_id = form_text(request, "sync_id", 64)
    done = await request.app[BROWSE].refresh(user, sync_id)
    if done is None:
        code = "refresh_off"
    elif not done:
        code = "refresh_wait"
    else:
        entity = await request.app[BROWSE].subscription(user, sync_id)
        info = (await request.app[FEED_INFO].for_feeds([entity.feed_url])).get(entity.feed_url)
        code = "refresh_failed" if info is None or info.last_error else "refreshed"
    raise web.HTTPSeeOther(_with_notice(_back(request), code))


def _with_notice(path: str, code: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}done={code}"
