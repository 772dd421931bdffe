"""Listening statistics (`/ui/stats`), on SQLite and on PostgreSQL, from plays pushed
through the gpodder API: time listened per week (position - started), the podcasts
listened to most, episodes finished per month (each episode once), bars drawn by
the server with no script and no inline style; nothing older than the windows."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from podsync.web.keys import DB
from tests.conftest import MakeConfig
from tests.ui.test_webui_episodes import app_for, text_of
from tests.ui.test_webui_http import sign_in
from tests.ui.test_webui_podcast_episodes import upload

pytestmark = pytest.mark.both_engines

NEWS, TALK = "https://news.example/feed.xml", "https://talk.example/feed.xml"


def play(
    feed: str, n: int, when: datetime, started: int, position: int, total: int
) -> dict[str, Any]:
    return {"podcast": feed, "episode": f"{feed}/{n}.mp3", "action": "play", "device": "phone",
            "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S"), "started": started,
            "position": position, "total": total}  # fmt: skip


def section(html: str, heading: str) -> list[tuple[str, str, str]]:
    """(label, bar width, value) of each bar under the heading."""
    part = html.split(f">{heading}</h2>", 1)[1].split("</section>", 1)[0]
    return re.findall(
        r'<li><span class="label">([^<]*)</span><span class="track"><svg[^>]*>'
        r'<rect class="fill" x="0" y="0" height="10" width="([^"]*)"></rect></svg></span>'
        r'<span class="value">([^<]*)</span></li>',
        part,
    )


async def test_weeks_top_podcasts_and_finished_months(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    now = datetime.now(UTC).replace(microsecond=0)
    monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0)
    this_week, last_week = monday + timedelta(hours=1), monday - timedelta(days=3)
    if this_week > now:
        this_week = now
    await upload(ui, [
        play(NEWS, 1, this_week, 0, 1800, 3600),        # 30 min this week
        play(NEWS, 1, this_week, 1800, 3590, 3600),     # 29 min 50 s: finished
        play(TALK, 1, last_week, 600, 1500, 6000),      # 15 min last week
        play(TALK, 2, last_week, 4000, 4000, 4000),     # marked played: no time, finished
        play(TALK, 2, this_week, 4000, 4000, 4000),     # finished again: counted once
        play(NEWS, 9, now - timedelta(weeks=20), 0, 3000, 3000),  # outside the 12 weeks
        play(NEWS, 8, now - timedelta(days=800), 0, 600, 600),    # outside both windows
    ])  # fmt: skip
    await sign_in(ui)
    page = await ui.get("/ui/stats")
    assert page.status == 200 and page.headers["Cache-Control"] == "no-store"
    html = await page.text()
    assert "<script>" not in html and "style=" not in html  # no inline script or style
    weeks = section(html, "Time listened per week")
    assert len(weeks) == 12
    assert weeks[-1] == (f"{monday:%d %b}", "100.0", "59 min")
    assert weeks[-2][2] == "15 min" and weeks[-2][1] == str(round(900 * 100 / 3590, 1))
    assert all(value == "none" for _, _, value in weeks[:-2])
    words = text_of(html)
    assert "1 h 14 min in all" in words  # 3590 + 900 seconds
    top = section(html, "Podcasts listened to most")
    assert [(label, value) for label, _, value in top] == [
        ("news.example/feed.xml", "59 min"),
        ("talk.example/feed.xml", "15 min"),
    ]
    months = section(html, "Episodes finished per month")
    assert len(months) == 12 and months[-1][0] == f"{now:%b %Y}"
    counted = sum(int(value) for _, _, value in months)
    assert counted == 3  # NEWS 1, TALK 2 (once), NEWS 9 (20 weeks ago; not NEWS 8)
    assert "3 episodes in all" in words
    # The Overview links here.
    assert 'href="/ui/stats"' in await (await ui.get("/ui/")).text()


async def test_overlapping_plays_from_two_devices_count_each_stretch_once(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    now = datetime.now(UTC).replace(microsecond=0)
    monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0)
    at = [min(monday + timedelta(minutes=10 * n), now) for n in range(8)]

    def tablet(item: dict[str, Any]) -> dict[str, Any]:
        return {**item, "device": "tablet"}

    await upload(ui, [
        play(NEWS, 1, at[0], 0, 1800, 3600),            # the phone: 0-30 min
        tablet(play(NEWS, 1, at[1], 900, 2700, 3600)),  # the tablet: 15-45 min
        play(NEWS, 1, at[2], 0, 1800, 3600),            # the phone again: nothing new
        play(NEWS, 1, at[3], 0, 1800, 3600),            # a save sent again: nothing new
        tablet(play(NEWS, 1, at[4], 2700, 2700, 3600)), # no time
        play(TALK, 1, at[5], 0, 600, 6000),             # another episode: 10 min
    ])  # fmt: skip
    await sign_in(ui)
    html = await (await ui.get("/ui/stats")).text()
    assert section(html, "Time listened per week")[-1][2] == "55 min"  # 45 + 10
    top = section(html, "Podcasts listened to most")
    assert [(label, value) for label, _, value in top] == [
        ("news.example/feed.xml", "45 min"),
        ("talk.example/feed.xml", "10 min"),
    ]


async def test_plays_of_an_episode_in_uploads_of_their_own_count_each_stretch_once(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    now = datetime.now(UTC).replace(microsecond=0)
    monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0)
    at = [min(monday + timedelta(minutes=10 * n), now) for n in range(10)]
    for item in [
        play(NEWS, 1, at[0], 0, 1800, 3600),      # 0-30 min
        {**play(NEWS, 1, at[1], 900, 2700, 3600), "device": "tablet"},  # 15-45: 15 new
        play(NEWS, 1, at[2], 0, 1800, 3600),      # nothing new
        play(TALK, 1, at[3], 0, 600, 6000),       # 10 min
        play(TALK, 1, at[4], 300, 600, 6000),     # nothing new
        play(TALK, 2, at[5], 100, 100, 600),      # no time
        play(TALK, 2, at[6], 0, 300, 600),        # 5 min
        play(TALK, 2, at[7], 0, 300, 600),        # nothing new
        play(TALK, 3, at[8], 0, 120, 600),        # 2 min, its only play
        play(TALK, 4, at[9], 590, 590, 600),      # finished, no time, its only play
    ]:  # fmt: skip
        await upload(ui, [item])  # each its own write: the next reads what it kept
    await sign_in(ui)
    html = await (await ui.get("/ui/stats")).text()
    assert section(html, "Time listened per week")[-1][2] == "1 h 02 min"  # 45 + 17
    top = section(html, "Podcasts listened to most")
    assert [(label, value) for label, _, value in top] == [
        ("news.example/feed.xml", "45 min"),
        ("talk.example/feed.xml", "17 min"),
    ]
    assert "1 episode in all" in text_of(html)  # TALK 4
    # An episode played once keeps no stretches of its own: its play says them.
    async with ui.server.app[DB].read() as conn:
        rows = await conn.fetch_all("SELECT episode_id FROM listened_episodes")
    assert len(rows) == 3  # NEWS 1, TALK 1, TALK 2


async def test_a_week_never_shows_more_than_its_hours(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    now = datetime.now(UTC).replace(microsecond=0)
    monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0)
    # 20 episodes each said to be played 12 hours, all this week: 240 h claimed.
    await upload(ui, [play(NEWS, n, min(monday + timedelta(minutes=n), now), 0, 43200, 43200)
                      for n in range(20)])  # fmt: skip
    await sign_in(ui)
    html = await (await ui.get("/ui/stats")).text()
    assert section(html, "Time listened per week")[-1][2] == "168 h 00 min"
    months = section(html, "Episodes finished per month")
    # Only the months since the first play are shown: this one (and the last, early on
    # a Monday that is the first of the month, when the plays are dated before it).
    assert 1 <= len(months) <= 2 and months[-1][0] == f"{now:%b %Y}"


async def test_no_plays_is_a_page_of_empty_bars(
    aiohttp_client: Any, make_config: MakeConfig
) -> None:
    ui = await app_for(aiohttp_client, make_config)
    await sign_in(ui, "bob")
    page = await ui.get("/ui/stats")
    assert page.status == 200
    html = await page.text()
    assert [w for _, w, _ in section(html, "Time listened per week")] == ["0.0"] * 12
    assert "No listening in the last 12 weeks." in text_of(html)


def test_weeks_and_months_are_the_persons_time_zone() -> None:
    """A play late on Sunday evening in UTC is Monday in Berlin: the next week."""
    from datetime import date
    from zoneinfo import ZoneInfo

    from podsync.services.listening_stats import WEEKS, spans_of
    from podsync.stretches import QUARTER_US

    sunday_late = int(datetime(2026, 11, 22, 23, 30, tzinfo=UTC).timestamp() * 1e6)
    at = sunday_late // QUARTER_US

    def week_of(zone: Any) -> date:
        weeks, _, spans = spans_of(zone, date(2026, 11, 27))
        (found,) = [weeks[s.slot] for s in spans[:WEEKS] if s.low <= at < s.high]
        return found

    def month_of(zone: Any) -> date:
        _, months, spans = spans_of(zone, date(2026, 11, 27))
        (found,) = [months[n] for n, s in enumerate(spans[WEEKS:]) if s.low <= at < s.high]
        return found

    assert week_of(ZoneInfo("Europe/Berlin")) == date(2026, 11, 23)
    assert week_of(UTC) == date(2026, 11, 16)
    assert month_of(ZoneInfo("Europe/Berlin")) == month_of(UTC) == date(2026, 11, 1)
    # A zone half an hour off the hour: its midnight is a whole quarter too.
    _, _, spans = spans_of(ZoneInfo("Asia/Kolkata"), date(2026, 11, 27))
    assert spans[WEEKS - 1].low * QUARTER_US == int(
        datetime(2026, 11, 23, tzinfo=ZoneInfo("Asia/Kolkata")).timestamp() * 1e6
    )


def test_merged_stretches_are_bounded_and_never_count_time_twice() -> None:
    from podsync.stretches import MAX_SPANS, covered

    spans: list[tuple[int, int]] = []
    counted = 0
    # 100 stretches of 10 s, 20 s apart: more than are kept apart.
    for n in range(100):
        spans, added = covered(spans, (n * 30, n * 30 + 10))
        counted += added
    assert counted == 1000 and len(spans) <= MAX_SPANS
    # Played again whole: only what the kept stretches do not cover counts, and
    # never more than the gaps that are left.
    spans, added = covered(spans, (0, 3000))
    assert 0 <= added <= 2000 and spans == [(0, 3000)]
    assert covered(spans, (100, 2900)) == ([(0, 3000)], 0)
