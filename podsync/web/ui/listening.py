"""What a person listened to: the history page, a page per podcast, and the rows of
"Continue listening" (the Overview's), all shown the same way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import NamedTuple
from urllib.parse import urlencode

from aiohttp import web

from podsync.feeds import url_key
from podsync.model import Subscription
from podsync.numbers import parse_int
from podsync.services.episode_pages import feed_ref
from podsync.services.episode_state import FINISHED, LABELS, NOT_PLAYED, played
from podsync.services.feed_info import EpisodeRef
from podsync.services.feeds import refusals
from podsync.services.listening import FILTERS, PodcastEpisode, finished
from podsync.sorting import sort_key
from podsync.store.listening import HistoryFilter, HistoryKey, HistoryRow
from podsync.web.keys import FEED_INFO
from podsync.web.ui.artwork import artwork_path
from podsync.web.ui.history_days import by_day
from podsync.web.ui.keys import BROWSE, LISTENING, SIGNED_IN, UP_NEXT
from podsync.web.ui.render import (
    Moment,
    duration,
    file_name,
    host_and_path,
    notice,
    page_number,
    render,
    shown_url,
    user_zone,
    zone_name,
)
from podsync.web.ui.returns import row_anchor

ACTION_LABELS = {
    "play": "Played",
    "download": "Downloaded",
    "delete": "Deleted",
    "new": "Marked new",
    "flattr": "Flattr",
}
# The history's action filter: (value, label).
ACTION_FILTERS = (
    ("play", "Played"),
    ("download", "Downloaded"),
    ("delete", "Deleted"),
    ("new", "New"),
)


@dataclass(frozen=True, slots=True)
class HistoryItem:
    episode: str
    href: str  # the episode's page
    podcast: str
    podcast_key: str
    action: str
    action_label: str
    progress: int | None
    position: int
    total: int
    progress_text: str
    device: str | None
    at: Moment


def progress_of(row: HistoryRow) -> int | None:
    if row.action == "play" and row.position is not None and row.total:
        return min(100, round(row.position * 100 / row.total))
    return None


async def history_items(
    request: web.Request,
    rows: Sequence[HistoryRow],
    captions: dict[str, str],
    tz: tzinfo,
    podcast_titles: dict[str, str] | None = None,
    as_log: bool = False,
) -> list[HistoryItem]:
    """Rows as a page shows them: titles the fetcher learned (episode, podcast), else
    the file name and the feed's host and path. `as_log` (the history): each play is
    what it was when it happened, "Played to 36%" or "Finished", not a state: an
    earlier part of an episode finished since is not "In progress"."""
    feed_info = request.app[FEED_INFO]
    refs = [EpisodeRef(a.podcast_url, a.episode_url, a.guid) for a in rows]
    episode_titles = await feed_info.episode_titles(refs)
    if podcast_titles is None:
        podcast_titles = await feed_info.titles({a.podcast_url for a in rows})
    items = []
    for a, ref in zip(rows, refs, strict=True):
        progress = progress_of(a)
        label = ACTION_LABELS.get(a.action, a.action)
        if progress is not None:
            if finished(a.position, a.total):
                label = "Finished"
            else:
                label = f"Played to {progress}%" if as_log else "In progress"
        items.append(
            HistoryItem(
                episode=episode_titles.get(ref) or file_name(a.episode_url),
                href=f"/ui/episodes/{a.episode_id}",
                podcast=a.podcast_title
                or podcast_titles.get(a.podcast_url)
                or host_and_path(a.podcast_url),
                podcast_key=url_key(a.podcast_url),
                action=a.action,
                action_label=label,
                progress=progress,
                position=min(a.position or 0, a.total or 0),
                total=a.total or 0,
                progress_text=_progress_text(a.position, a.total, progress),
                device=captions.get(a.device_id or "", a.device_id),
                at=Moment(a.occurred_at, tz),
            )
        )
    return items


def _progress_text(position: int | None, total: int | None, progress: int | None) -> str:
    """How far a play got, "12:00 of 45:00 (27%)"; empty for an action with no play."""
    if progress is None:
        return ""
    return f"{duration(position or 0)} of {duration(total or 0)} ({progress}%)"


def _key_param(request: web.Request, name: str) -> HistoryKey | None:
    """A page key `<time>.<seq>` from the query (anything else: the first page)."""
    time, _, seq = request.query.get(name, "").partition(".")
    key = parse_int(time), parse_int(seq)
    return (key[0], key[1]) if key[0] is not None and key[1] is not None else None


def _day_start(text: str, tz: tzinfo) -> int | None:
    """The start of a day (YYYY-MM-DD, in the person's zone) in microseconds; None
    for anything else."""
    try:
        day = datetime.strptime(text, "%Y-%m-%d")
    except ValueError:
        return None
    if not 1970 <= day.year <= 9000:
        return None
    return int(day.replace(tzinfo=tz).timestamp() * 1_000_000)


def _key_text(key: HistoryKey) -> str:
    return f"{key[0]}.{key[1]}"


async def history(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    service = request.app[LISTENING]
    tz = user_zone(request)
    podcast = request.query.get("podcast", "")[:4096]
    device = request.query.get("device", "")[:64]
    action = request.query.get("action", "")
    if action not in dict(ACTION_FILTERS):
        action = ""
    podcasts, device_list = await service.filters(user)
    only = HistoryFilter(podcast or None, device or None, action or None)
    before = _key_param(request, "before")
    day_text = request.query.get("day", "")[:10]
    jump = _day_start(day_text, tz)
    if jump is not None:  # the date jump: that day and what came before it
        before = (jump + 86_400_000_000, 0)
    page = await service.history(user, only, before, _key_param(request, "after"))
    captions = {d.device_id: d.caption for d in device_list}
    podcast_titles = await request.app[FEED_INFO].titles(
        {a.podcast_url for a in page.rows} | {url for _, url, _ in podcasts}
    )
    rows = await history_items(request, page.rows, captions, tz, podcast_titles, as_log=True)
    base = {k: v for k, v in (("podcast", podcast), ("device", device), ("action", action)) if v}

    def href(**extra: str) -> str:
        query = {**base, **extra}
        return "/ui/history" + ("?" + urlencode(query) if query else "")

    podcast_options = sorted(
        (
            (key, title or podcast_titles.get(url) or host_and_path(url))
            for key, url, title in podcasts
        ),
        key=lambda option: sort_key(option[1]) or "",
    )
    return render(
        request,
        "history.html",
        "Listening history",
        zone=zone_name(tz),
        podcasts=podcast_options,
        podcast=podcast,
        device_options=[(d.device_id, d.caption) for d in device_list],
        device=device,
        action_options=ACTION_FILTERS,
        action=action,
        filtered=bool(base),
        rows=rows,
        days=by_day(page.rows, rows, tz),
        day=day_text,
        prev_href=href(after=_key_text(page.newer_than)) if page.newer_than else None,
        next_href=href(before=_key_text(page.older_than)) if page.older_than else None,
    )


@dataclass(frozen=True, slots=True)
class EpisodeItem:
    title: str
    href: str  # the episode's page
    ref: str  # its id, for Mark played / not played
    played: str  # NOT_PLAYED, IN_PROGRESS, FINISHED
    length_known: bool  # the feed's duration, or a play's total: Mark played can say where
    published: Moment | None  # the feed's date for it
    state: str  # Not played, Finished, In progress, Downloaded, Deleted, Marked new
    acted: bool  # this person did something with it
    progress: int | None
    position: int
    total: int
    progress_text: str
    device: str | None
    at: Moment | None  # when the state's action happened
    also: str  # the other actions' latest state, in words ("downloaded")
    listed: bool  # in the feed as last fetched
    anchor: str = ""  # the row's id: forms come back to it
    length: str = ""  # "45:00": the feed's duration, else a play's total
    published_us: int | None = None  # for "this and all older"
    queue_key: tuple[str, str] = ("", "")  # the Up next key of the episode


class _RowExtra(NamedTuple):
    anchor: str
    length: str
    published_us: int | None
    queue_key: tuple[str, str]


def _episode_item(
    episode: PodcastEpisode, entity: Subscription, captions: dict[str, str], tz: tzinfo
) -> EpisodeItem:
    title = episode.title or file_name(episode.episode_url)
    published = Moment(episode.published_at, tz) if episode.published_at is not None else None
    state = episode.state
    if state is not None:
        ref = str(state.episode_id)
    else:
        assert entity.id is not None
        ref = feed_ref(entity.id, episode.guid, episode.episode_url)
    href, key = f"/ui/episodes/{ref}", played(state)
    seconds = episode.duration or (
        state.play.total if state is not None and state.play is not None else None
    )
    length_known = bool(seconds)
    extra = _RowExtra(
        row_anchor(episode.guid, episode.episode_url),
        duration(seconds) if seconds else "",
        episode.published_at,
        (entity.url_key, f"g{episode.guid}" if episode.guid else f"u{episode.episode_url}"),
    )
    if state is None:
        return EpisodeItem(
            title, href, ref, key, length_known, published, "Not played", False, None,
            0, 0, "", None, None, "", episode.listed, *extra,
        )  # fmt: skip
    # A play says most (where the person got to); else the latest action.
    shown = state.play or state.latest
    progress = progress_of(shown)
    label = ACTION_LABELS.get(shown.action, shown.action)
    if progress is not None:
        label = LABELS[key]
        if key == NOT_PLAYED:  # marked not played, or stopped at 0
            progress = None
    also = []
    if state.download is not None and (
        state.delete is None or state.delete.key < state.download.key
    ):
        also.append("downloaded")
    elif state.delete is not None:
        also.append("download deleted")
    return EpisodeItem(
        title=title,
        href=href,
        ref=ref,
        played=key,
        length_known=length_known,
        published=published,
        state=label,
        acted=True,
        progress=progress,
        position=min(shown.position or 0, shown.total or 0),
        total=shown.total or 0,
        progress_text=_progress_text(shown.position, shown.total, progress),
        device=captions.get(shown.device_id or "", shown.device_id),
        at=Moment(shown.occurred_at, tz),
        also=", ".join(also) if shown.action == "play" else "",
        listed=episode.listed,
        anchor=extra.anchor,
        length=extra.length,
        published_us=extra.published_us,
        queue_key=extra.queue_key,
    )


async def podcast(request: web.Request) -> web.Response:
    """One podcast: what the fetcher knows of it, the devices that synced it, and its
    episodes newest first (the feed's, then those it no longer lists) with this
    person's latest state of each, a page at a time."""
    user = request[SIGNED_IN].user
    tz = user_zone(request)
    entity = await request.app[BROWSE].subscription(user, request.match_info["sync_id"])
    feed_info = request.app[FEED_INFO]
    info = (await feed_info.for_feeds([entity.feed_url])).get(entity.feed_url)
    asked = page_number(request)
    only = request.query.get("show", "")
    if only not in FILTERS:
        only = ""
    found = await request.app[LISTENING].podcast(user, entity.url_key, asked, only=only or None)

    def href(number: int) -> str:
        query = {k: v for k, v in (("show", only), ("page", str(number))) if v and v != "1"}
        return request.path + ("?" + urlencode(query) if query else "")

    if asked > found.page:
        raise web.HTTPFound(href(found.page))  # past the end: the last page
    _, device_list = await request.app[LISTENING].filters(user)
    captions = {d.device_id: d.caption for d in device_list}
    title = entity.title or (info.title if info else None) or host_and_path(entity.feed_url)
    counts = await request.app[LISTENING].podcast_counts(user, entity.url_key)
    queued = await request.app[UP_NEXT].keys(user)
    episodes = [_episode_item(e, entity, captions, tz) for e in found.episodes]
    return render(
        request,
        "podcast.html",
        title,
        notice=notice(request),
        s=entity,
        subscribed=entity.unsubscribed_at is None,
        since=Moment(entity.unsubscribed_at or entity.subscribed_at, tz),
        artwork=artwork_path(info.artwork_hash if info else None),
        artwork_error=refusals.shown_to(info.artwork_error, user.admin) if info else None,
        link=shown_url(info.link if info else None),
        fetching=feed_info.enabled,
        fetched_at=Moment(info.fetched_at, tz) if info and info.fetched_at else None,
        fetch_error=refusals.shown_to(info.last_error, user.admin) if info else None,
        next_try=Moment(info.next_try_at, tz) if info and info.last_error else None,
        devices=[captions.get(d, d) for d in found.devices],
        episodes=episodes,
        queued={e.ref for e in episodes if e.queue_key in queued},
        description=await request.app[FEED_INFO].description(entity.feed_url),
        show=only,
        show_options=[("", "All"), *((k, LABELS[k]) for k in FILTERS)],
        counts=counts,
        show_href=lambda key: request.path + ("?" + urlencode({"show": key}) if key else ""),
        finished_key=FINISHED,
        from_feed=found.from_feed,
        in_feed=found.in_feed,
        unlisted=found.unlisted,
        page_label=f"Page {found.page} of {found.pages}" if found.pages > 1 else "",
        prev_href=href(found.page - 1) if found.page > 1 else None,
        next_href=href(found.page + 1) if found.page < found.pages else None,
        history_href="/ui/history?" + urlencode({"podcast": entity.url_key}),
        back=href(found.page),
        zone=zone_name(tz),
    )
