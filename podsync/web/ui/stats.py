"""Listening statistics (`/ui/stats`): time listened per week, the podcasts listened
to most, episodes finished per month, as bars drawn by the server (inline SVG whose
sizes are attributes: no script, no inline style, nothing the CSP refuses)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web

from podsync.services.listening_stats import TOP, WEEKS
from podsync.web.keys import FEED_INFO
from podsync.web.ui.keys import LISTENING, LISTENING_STATS, SIGNED_IN
from podsync.web.ui.render import host_and_path, render, user_zone, zone_name


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: int
    text: str  # the value in words
    width: float  # share of the longest bar, 0-100


def listened(seconds: int) -> str:
    """ "2 h 05 min", "35 min", "under a minute", "none"."""
    if seconds <= 0:
        return "none"
    hours, minutes = divmod(seconds // 60, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min" if minutes else "< 1 min"


def bars(rows: list[tuple[str, int, str]]) -> list[Bar]:
    top = max((v for _, v, _ in rows), default=0)
    return [
        Bar(label, value, text, round(value * 100 / top, 1) if top else 0.0)
        for label, value, text in rows
    ]


async def stats(request: web.Request) -> web.Response:
    user = request[SIGNED_IN].user
    tz = user_zone(request)
    found = await request.app[LISTENING_STATS].stats(user, tz, datetime.now(UTC))
    podcasts, _ = await request.app[LISTENING].filters(user)
    by_key = {key: (url, title) for key, url, title in podcasts}
    titles = await request.app[FEED_INFO].titles({url for url, _ in by_key.values()})
    top: list[tuple[str, int, str]] = []
    for key, seconds in found.podcasts:
        url, title = by_key.get(key, (key, None))
        name = title or titles.get(url) or host_and_path(url)
        top.append((name, seconds, listened(seconds)))
    weeks = [(f"{monday:%d %b}", seconds, listened(seconds)) for monday, seconds in found.weeks]
    months = [(f"{first:%b %Y}", count, str(count)) for first, count in found.months]
    total = sum(s for _, s in found.weeks)
    return render(
        request,
        "stats.html",
        "Listening statistics",
        weeks=bars(weeks),
        weeks_total=listened(total),
        podcasts=bars(top),
        months=bars(months),
        finished_total=sum(c for _, c in found.months),
        week_count=WEEKS,
        month_count=len(found.months),
        top_count=TOP,
        plays=found.plays,
        zone=zone_name(tz),
    )
