"""The web UI's third release on both engines, through the real app: schema step 21
on a database of the release before; A-Z as people read it (case, accents and a
leading "The"/"A" do not count) on every page of a long list; a time zone per
person, refused with the problem named when the zone database does not know it,
and "today 19:49"; the history calling each play what it was; /favicon.ico; and the
small defects of the review (the grant's Cancel, the new app password on top,
device cards without the account's count)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from aiohttp import FormData
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.config import Config
from podsync.sorting import sort_key
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.web.app import create_app
from podsync.web.keys import DB
from tests.conftest import PASSWORD
from tests.support.gpodder_support import basic
from tests.support.migration_support import add_user, database_at
from tests.support.ui_session import words
from tests.ui.test_webui_http import sign_in

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]
FEED = "https://feeds.example.com/show.xml"
# The schema of the release before: every step before the one that made the artwork
# table (found by what it makes, so later steps and renumbering leave it right).
RELEASE_BEFORE = next(
    n
    for n, step in enumerate(MIGRATIONS)
    if isinstance(step, str) and "CREATE TABLE artwork" in step
)
ORIGIN: dict[str, str] = {}


@pytest.fixture
async def ui(aiohttp_client: Any, config: Config, seeded_users: tuple[str, ...]) -> Client:
    result: Client = await aiohttp_client(create_app(config))
    ORIGIN["Origin"] = str(result.make_url("")).rstrip("/")
    return result


async def post_form(ui: Client, path: str, csrf: str, **fields: str) -> tuple[int, str, str]:
    """A form's POST as a browser sends it: (status, Location, body)."""
    async with ui.post(
        path, data={"csrf": csrf, **fields}, headers=ORIGIN, allow_redirects=False
    ) as answer:
        return answer.status, answer.headers.get("Location", ""), await answer.text()


async def page_text(ui: Client, path: str) -> str:
    async with ui.get(path) as answer:
        assert answer.status == 200, await answer.text()
        return await answer.text()


async def test_step_21_on_a_database_of_the_release_before(
    aiohttp_client: Any, config: Config, db_engine: str
) -> None:
    async with database_at(config, db_engine, RELEASE_BEFORE) as db:
        await add_user(db, "alice", PASSWORD)
        async with db.write() as conn:
            await conn.execute(
                # Checked a moment ago: the start's collection of feeds nobody
                # subscribes to leaves it alone for an hour.
                "INSERT INTO feed_info (url_key, feed_url, title, etag, last_modified, "
                "artwork_url, next_try_at, checked_at) VALUES ('k', ?, 'The Show', "
                "'\"v1\"', 'then', 'http://art.example/x.png', 0, ?)",
                (FEED, timestamps.now_us()),
            )
    client: Client = await aiohttp_client(create_app(config))  # migrates
    async with client.app[DB].read() as conn:
        feed = await conn.fetch_one(
            "SELECT etag, last_modified, artwork_hash, artwork_source FROM feed_info"
        )
        user = await conn.fetch_one("SELECT time_zone FROM users WHERE name = 'alice'")
        tables = [
            await conn.fetch_one("SELECT count(*) FROM artwork"),
            await conn.fetch_one("SELECT count(*) FROM sync_refusals"),
            await conn.fetch_one("SELECT count(*) FROM revoked_app_passwords"),
        ]
        folded = await conn.fetch_one(
            "SELECT podsync_sort_key('The Élan Vital'), podsync_sort_key('ÜBER'), "
            "podsync_sort_key('a16z'), podsync_sort_key('A')"
        )
    # The next fetch reads the whole feed, and with it the artwork.
    assert feed is not None and tuple(feed) == (None, None, None, None)
    assert user is not None and user[0] is None  # the server's zone until they choose
    assert [int(t[0]) for t in tables if t is not None] == [0, 0, 0]
    assert folded is not None and tuple(folded) == ("elan vital", "uber", "a16z", "a")
    # And the person signs in as before.
    await sign_in(client)


TITLES = [
    "The Daily",
    "Économie",
    "economics",
    "a16z Podcast",
    "A Zebra Story",
    "An Hour of Jazz",
    "zulu",
    "ÁLPHA",
    "Beta",
    "beta",
    "Über Alles",
    "the",
    "Daily Tech",
    *(f"Show {n:03d}" for n in range(47)),
]


async def test_a_to_z_as_people_read_it_across_pages(ui: Client) -> None:
    opml = (
        '<?xml version="1.0"?><opml version="2.0"><body>'
        + "".join(
            f'<outline type="rss" text="{t}" xmlUrl="https://feeds.example.com/{n}.xml"/>'
            for n, t in enumerate(TITLES)
        )
        + "</body></opml>"
    )
    csrf = await sign_in(ui)
    form = FormData()
    form.add_field("csrf", csrf)
    form.add_field("opml", opml.encode(), filename="mine.opml", content_type="text/x-opml")
    async with ui.post("/ui/import", data=form, headers=ORIGIN, allow_redirects=False) as answer:
        assert answer.status == 303, await answer.text()
    shown: list[str] = []
    for number in (1, 2):
        text = await page_text(ui, f"/ui/subscriptions?page={number}")
        shown += re.findall(r'<a class="title" href="/ui/podcasts/[^"]+">([^<]+)</a>', text)
    expected = sorted(TITLES, key=lambda t: sort_key(t) or "")  # stable: ties as imported
    assert [_unescape(t) for t in shown] == expected
    assert expected[:6] == ["a16z Podcast", "ÁLPHA", "Beta", "beta", "The Daily", "Daily Tech"]
    # Searching keeps the order.
    text = await page_text(ui, "/ui/subscriptions?q=DAILY")
    found = [_unescape(t) for t in re.findall(r'class="title" href="[^"]+">([^<]+)<', text)]
    assert found == ["The Daily", "Daily Tech"]


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


async def test_a_time_zone_per_person(ui: Client) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    yesterday = now - timedelta(days=1)
    actions = [
        {
            "podcast": FEED,
            "episode": f"https://cdn.example.com/{name}.mp3",
            "action": "download",
            "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S"),
            "device": "phone",
        }
        for name, when in (
            ("old", datetime(2026, 1, 5, 8, 0, tzinfo=UTC)),
            ("yesterday", yesterday),
            ("now", now),
        )
    ]
    async with ui.post("/api/2/episodes/alice.json", json=actions, headers=basic()) as answer:
        assert answer.status == 200
    csrf = await sign_in(ui)
    text = words(await page_text(ui, "/ui/history"))
    assert "2026-01-05 08:00" in text and "Times in UTC" in text
    # A zone the database does not know: nothing kept, and the browser is sent to
    # the Account page at the field (a GET: a reload sends nothing again), where
    # the problem and the name as typed are.
    status, where, _ = await post_form(ui, "/ui/account/time-zone", csrf, time_zone="Mars/Olympus")
    assert status == 303 and where.startswith("/ui/account?refused_zone=Mars")
    assert where.endswith("#f-time_zone")
    body = await page_text(ui, where.split("#")[0])
    said = words(body)
    assert "“Mars/Olympus” is not a time zone this server knows." in said
    assert 'value="Mars/Olympus"' in body  # the field kept as typed
    assert "Times in UTC" in words(await page_text(ui, "/ui/history"))
    for bad in ("../../etc/passwd", "/usr/share/zoneinfo/UTC", "x" * 300):
        status, where, _ = await post_form(ui, "/ui/account/time-zone", csrf, time_zone=bad)
        assert status == 303, bad
        body = await page_text(ui, where.split("#")[0])
        assert "is not a time zone this server knows" in words(body), bad
    # Any letter case, kept as the zone database spells it.
    status, where, _ = await post_form(ui, "/ui/account/time-zone", csrf, time_zone="europe/berlin")
    assert (status, where) == (303, "/ui/account?done=zone")
    account = words(await page_text(ui, "/ui/account?done=zone"))
    assert "Time zone saved" in account and "Now: Europe/Berlin." in account
    berlin = ZoneInfo("Europe/Berlin")
    text = words(await page_text(ui, "/ui/history"))
    assert "Times in Europe/Berlin" in text and "2026-01-05 09:00" in text
    assert f"today {now.astimezone(berlin):%H:%M}" in text
    assert f"yesterday {yesterday.astimezone(berlin):%H:%M}" in text
    # bob still reads the server's zone.
    bob_csrf = await sign_in(ui, "bob")
    assert bob_csrf and "Times in UTC" in words(await page_text(ui, "/ui/devices"))
    # Empty: back to the server's.
    csrf = await sign_in(ui)
    status, _, _ = await post_form(ui, "/ui/account/time-zone", csrf, time_zone="")
    assert status == 303
    assert "Now: UTC, the server's." in words(await page_text(ui, "/ui/account"))


async def test_the_history_calls_each_play_what_it_was(ui: Client) -> None:
    """An early part of an episode finished since is "Played to 36%", not "In
    progress"; Continue listening does not list the episode."""
    episode = "https://cdn.example.com/story.mp3"
    plays = [
        (episode, "2026-11-01T08:00:00", 1296),
        (episode, "2026-11-02T08:00:00", 3600),
        ("https://cdn.example.com/other.mp3", "2026-11-03T08:00:00", 900),
    ]
    actions = [
        {
            "podcast": FEED,
            "episode": url,
            "action": "play",
            "timestamp": when,
            "started": 0,
            "position": position,
            "total": 3600,
            "device": "phone",
        }
        for url, when, position in plays
    ]
    async with ui.post("/api/2/episodes/alice.json", json=actions, headers=basic()) as answer:
        assert answer.status == 200
    await sign_in(ui)
    rows = re.findall(
        r'<a class="episode" href="[^"]*">([^<]+)</a>\s*<span class="action[^"]*">([^<]+)</span>',
        await page_text(ui, "/ui/history"),
    )
    assert rows == [
        ("other.mp3", "Played to 25%"),
        ("story.mp3", "Finished"),
        ("story.mp3", "Played to 36%"),
    ]
    overview = await page_text(ui, "/ui/")
    going = re.search(r'id="h-continue".*?</ol>', overview, re.S)
    assert going is not None and "other.mp3" in going.group(0)
    assert "story.mp3" not in going.group(0).split("Recently finished")[0]


async def test_favicon_and_the_small_defects(ui: Client) -> None:
    async with ui.get("/favicon.ico") as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"] == "image/vnd.microsoft.icon"
        icon = await answer.read()
    assert icon[:4] == b"\x00\x00\x01\x00" and b"\x89PNG" in icon
    async with ui.post("/api/2/devices/alice/phone.json", json={}, headers=basic()) as answer:
        assert answer.status == 200
    csrf = await sign_in(ui)
    devices = await page_text(ui, "/ui/devices")
    assert "<dt>Subscriptions</dt>" not in devices  # not on each card
    assert "Every device syncs the one subscription list of your account: 0" in words(devices)
    # A new app password is the first thing on the page that shows it.
    status, _, body = await post_form(ui, "/ui/account/app-passwords", csrf, name="Kasts")
    assert status == 200
    assert body.index('class="secret"') < body.index("Change password")
