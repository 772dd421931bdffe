"""A podcast's page lists its feed's episodes newest first, on SQLite and on
PostgreSQL: the fetcher's list (by date, then the feed's own order) a page of 100 at
a time, each with this person's latest state matched as episode titles are (the
guid when the action has one the feed lists, else the media URL), episodes never
acted on as not played, then those the feed no longer lists; without a fetched feed,
the episodes acted on; and the schema step that brought dates and order, on a
database of the release before."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from podsync import timestamps
from podsync.config import Config
from podsync.feeds import url_key
from podsync.services.accounts import AccountService
from podsync.services.passwords import PasswordService
from podsync.storage.migrations.sqlite import MIGRATIONS
from podsync.web.app import create_app
from podsync.web.keys import DB, FEED_FETCHER
from tests.conftest import PASSWORD, MakeConfig, with_accounts
from tests.support.feed_site import FeedSite, rss
from tests.support.gpodder_support import basic
from tests.support.migration_support import add_user, database_at
from tests.ui.test_webui_http import sign_in

pytestmark = pytest.mark.both_engines

Client = TestClient[Any, Any]
ROW = re.compile(
    r'<li id="ep-[0-9a-f]+"(?: class="untouched")?>\s*<div class="head">\s*'
    r'(?:<span class="pick">.*?</span>\s*)?'
    r'<a class="episode" href="[^"]*">([^<]*)</a>'
    r'\s*<span class="action[^"]*">([^<]*)</span>(.*?)(?:<div class="row-actions">.*?)?</li>',
    re.S,
)
PODCAST_LINK = re.compile(r'href="(/ui/podcasts/[^"?]+)"')
# The release before this step: the step is found by what it makes, not by number.
STEP = next(n for n, step in enumerate(MIGRATIONS) if isinstance(step, str) and "feed_rank" in step)


@pytest.fixture
async def site() -> AsyncIterator[FeedSite]:
    server = FeedSite()
    await server.start()
    yield server
    await server.close()


def fetching(make_config: MakeConfig) -> Config:
    return make_config(feeds={"fetch_metadata": True, "allow_private": True})


async def app_for(aiohttp_client: Any, config: Config) -> Client:
    async def seed(accounts: AccountService) -> None:
        await accounts.add_user("alice", PASSWORD)

    await with_accounts(config, seed)
    client: Client = await aiohttp_client(create_app(config))
    return client


async def subscribe(ui: Client, csrf: str, feed_url: str) -> str:
    """Subscribe on the Subscriptions page; the podcast page's path."""
    own = str(ui.make_url("")).rstrip("/")
    page = await ui.post(
        "/ui/subscriptions", data={"csrf": csrf, "feed_url": feed_url}, headers={"Origin": own}
    )
    text = await page.text()
    assert "Subscribed." in text, text
    found = PODCAST_LINK.search(text)
    assert found is not None
    return found.group(1)


async def upload(ui: Client, actions: list[dict[str, Any]]) -> None:
    response = await ui.post("/api/2/episodes/alice.json", json=actions, headers=basic())
    assert response.status == 200, await response.text()


def act(feed: str, episode: str, kind: str, when: str, **extra: Any) -> dict[str, Any]:
    return {"podcast": feed, "episode": episode, "action": kind, "timestamp": when,
            "device": "phone", **extra}  # fmt: skip


def play(feed: str, n: int | str, when: str, position: int, **extra: Any) -> dict[str, Any]:
    episode = n if isinstance(n, str) else f"https://cdn.show.example/{n}.mp3"
    return act(feed, episode, "play", when, started=0, position=position, total=3000, **extra)


async def rows(ui: Client, path: str) -> list[tuple[str, str, str]]:
    response = await ui.get(path)
    assert response.status == 200, path
    return [
        (t, s, " ".join(re.sub(r"<[^>]+>", " ", rest).split()))
        for t, s, rest in ROW.findall(await response.text())
    ]


def title(n: int) -> str:
    return f"Episode {n}: a conversation about things"


async def test_the_feed_newest_first_with_each_state_then_what_it_no_longer_lists(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    site.feed = rss(episodes=250)
    ui = await app_for(aiohttp_client, fetching(make_config))
    csrf = await sign_in(ui)
    show = site.url("/show.xml")
    path = await subscribe(ui, csrf, show)  # fetched at once
    await upload(
        ui,
        [
            play(show, 250, "2026-11-10T08:00:00", 600),
            act(show, "https://cdn.show.example/249.mp3", "download", "2026-11-09T08:00:00"),
            # The host moved the file: the guid still names the episode.
            play(show, "https://media.example/moved-248.mp3", "2026-11-08T08:00:00", 2990,
                 guid="show-248"),
            play(show, 3, "2026-11-07T08:00:00", 100),
            # Gone from the feed since: listed after it, newest first by the action.
            play(show, "https://cdn.show.example/old-a.mp3", "2026-01-01T08:00:00", 50),
            act(show, "https://cdn.show.example/old-b.mp3", "download", "2026-02-01T08:00:00"),
        ],
    )  # fmt: skip
    first = await rows(ui, path)
    assert [t for t, _, _ in first] == [title(n) for n in range(250, 150, -1)]
    assert first[0][1] == "In progress" and "10:00 of 50:00 (20%)" in first[0][2]
    assert "Published 2024-07-21 22:13 · 10:00 · In progress 2026-11-10 08:00" in first[0][2]
    assert first[1][1] == "Downloaded"
    assert first[2][1] == "Finished"
    assert [s for _, s, _ in first[3:]] == ["Not played"] * 97
    text = await (await ui.get(path)).text()
    assert "The feed's 250 episodes, newest first, then 2 you played or downloaded" in text
    assert "Page 1 of 3" in text and f'href="{path}?page=2" rel="next"' in text
    assert (await ui.get(path)).headers["Content-Type"].startswith("text/html")
    second = await rows(ui, path + "?page=2")
    assert [t for t, _, _ in second] == [title(n) for n in range(150, 50, -1)]
    third = await rows(ui, path + "?page=3")
    assert [t for t, _, _ in third] == [
        *(title(n) for n in range(50, 0, -1)),
        "old-b.mp3",
        "old-a.mp3",
    ]
    assert third[47][1] == "In progress"  # episode 3
    assert third[50][1] == "Downloaded" and "no longer in the feed" in third[50][2]
    assert third[51][1] == "In progress" and "no longer in the feed" in third[51][2]
    # A page past the end goes to the last; a page that is no number, to the first.
    past = await ui.get(path + "?page=9", allow_redirects=False)
    assert past.status == 302 and past.headers["Location"] == path + "?page=3"
    for junk in ("0", "-1", "x", "9" * 30):
        assert [t for t, _, _ in await rows(ui, f"{path}?page={junk}")] == [t for t, _, _ in first]


async def test_a_feed_that_lists_oldest_first_is_shown_newest_first(
    aiohttp_client: Any, make_config: MakeConfig, site: FeedSite
) -> None:
    items = re.findall(rb"<item>.*?</item>", rss(episodes=4))
    site.feed = rss(episodes=0).replace(b"</channel>", b"".join(reversed(items)) + b"</channel>")
    ui = await app_for(aiohttp_client, fetching(make_config))
    path = await subscribe(ui, await sign_in(ui), site.url("/show.xml"))
    assert [t for t, _, _ in await rows(ui, path)] == [title(n) for n in (4, 3, 2, 1)]


async def test_without_a_fetched_feed_the_episodes_acted_on(
    aiohttp_client: Any, config: Config
) -> None:
    ui = await app_for(aiohttp_client, config)  # fetch_metadata = false
    feed = "https://feeds.example.com/show.xml"
    path = await subscribe(ui, await sign_in(ui), feed)
    await upload(
        ui,
        [
            play(feed, 1, "2026-11-01T08:00:00", 3000),
            act(feed, "https://cdn.show.example/2.mp3", "download", "2026-11-03T08:00:00"),
            play(feed, 3, "2026-11-02T08:00:00", 60),
        ],
    )
    shown = await rows(ui, path)
    assert [(t, s) for t, s, _ in shown] == [
        ("2.mp3", "Downloaded"), ("3.mp3", "In progress"), ("1.mp3", "Finished")
    ]  # fmt: skip
    assert not any("no longer in the feed" in rest for _, _, rest in shown)


async def test_the_step_on_a_database_of_the_release_before(
    aiohttp_client: Any, make_config: MakeConfig, db_engine: str, site: FeedSite
) -> None:
    """Rows the fetcher stored before the step (no date, no place) still list and
    match; the feed's validators are forgotten, so its next fetch is a full one and
    brings the order."""
    config = fetching(make_config)
    show = site.url("/show.xml")
    passwords = PasswordService.for_config(config.auth)
    try:
        async with database_at(config, db_engine, STEP) as db:
            await add_user(db, "alice", PASSWORD)
            async with db.write() as conn:
                # Checked two minutes ago: the pruner, at start, keeps a feed nobody
                # subscribes to (yet) for an hour after its last check, and a Refresh
                # may fetch it (a minute has passed).
                await conn.execute(
                    "INSERT INTO feed_info (url_key, feed_url, title, etag, fetched_at, "
                    "checked_at, next_try_at) VALUES (?, ?, 'The Show', '\"v1\"', 1, ?, ?)",
                    (url_key(show), show, timestamps.now_us() - 120_000_000, 2**62),
                )
                await conn.execute_many(
                    "INSERT INTO feed_episodes (url_key, episode_url, guid, title) "
                    "VALUES (?, ?, ?, ?)",
                    [
                        (url_key(show), f"https://cdn.show.example/{n}.mp3", f"show-{n}", title(n))
                        for n in (1, 2, 3)
                    ],
                )
    finally:
        passwords.close()
    site.feed = rss(episodes=5)  # served with the etag "v1": the one stored
    ui: Client = await aiohttp_client(create_app(config))  # migrates
    async with ui.app[DB].read() as conn:
        row = await conn.fetch_one("SELECT etag, last_modified FROM feed_info")
        stored = await conn.fetch_all("SELECT published_at, feed_rank FROM feed_episodes")
    assert row is not None and tuple(row) == (None, None)
    assert [tuple(r) for r in stored] == [(None, None)] * 3
    # An app syncs the subscription and a play: the old rows list and match.
    added = await ui.post(
        "/api/2/subscriptions/alice/phone.json", json={"add": [show], "remove": []},
        headers=basic(),
    )  # fmt: skip
    assert added.status == 200, await added.text()
    await upload(ui, [play(show, 2, "2026-11-10T08:00:00", 600)])
    await sign_in(ui)
    found = PODCAST_LINK.search(await (await ui.get("/ui/subscriptions")).text())
    assert found is not None
    path = found.group(1)
    before = {(t, s) for t, s, _ in await rows(ui, path)}
    assert before == {(title(2), "In progress"), (title(1), "Not played"), (title(3), "Not played")}
    # The next fetch asks without the old validator, so the feed comes in full.
    assert await ui.app[FEED_FETCHER].refresh(url_key(show), show)
    assert "If-None-Match" not in site.headers_seen[-1]
    assert [(t, s) for t, s, _ in await rows(ui, path)] == [
        (title(n), "In progress" if n == 2 else "Not played") for n in (5, 4, 3, 2, 1)
    ]
