"""Listening statistics (`/ui/stats`), on SQLite and on PostgreSQL, from plays pushed
through the gpodder API: time listened per week (position - started), the podcasts
listened to most, episodes finished per month (each episode once), bars drawn by
the server with no script and no inline style; nothing older than the windows."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

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

    from podsync.services.listening_stats import counted
    from podsync.store.listening import PlayRow

    sunday_late = int(datetime(2026, 11, 22, 23, 30, tzinfo=UTC).timestamp() * 1e6)
    rows = [PlayRow(sunday_late, 1, "k", 0, 600, 600)]
    berlin = counted(rows, ZoneInfo("Europe/Berlin"), date(2026, 11, 27))
    utc = counted(rows, UTC, date(2026, 11, 27))
    assert berlin.weeks[-1] == (date(2026, 11, 23), 600) and berlin.weeks[-2][1] == 0
    assert utc.weeks[-2] == (date(2026, 11, 16), 600) and utc.weeks[-1][1] == 0
    assert berlin.months[-1] == (date(2026, 11, 1), 1) and berlin.podcasts == [("k", 600)]
