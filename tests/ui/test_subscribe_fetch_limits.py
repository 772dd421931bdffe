"""The web UI's Subscribe form is no download amplifier (contract section 16): it
fetches an address at most once a minute, whatever the answer was, and a user's
posts fetch at most a few addresses a minute. Both hold with two `podsync serve`
processes on one database, on both engines. Past a bound the form comes back with
the problem named (429 and Retry-After), nothing is fetched and nothing subscribed;
within the minute another try gets the first answer without a fetch."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import pytest

from podsync.config import Config
from podsync.services.feeds.checks import CHECKS_PER_USER
from podsync.storage.engine import create_engine
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.feed_site import PNG, ThreadedFeedHost, rss
from tests.support.gpodder_support import Answer, call
from tests.support.migration_support import add_user, database_at
from tests.support.replica_http import basic_header

pytestmark = pytest.mark.both_engines

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
RSS = "application/rss+xml"
# The finding's address: 4.5 MB that is not a feed.
BLOB = bytes(range(256)) * (4_500_000 // 256)


@pytest.fixture
def feeds() -> Iterator[ThreadedFeedHost]:
    answers = {
        "/blob": (200, "application/octet-stream", BLOB),
        "/show.xml": (200, RSS, rss("The Show", episodes=3)),
        "/down.xml": (503, "text/plain", b"down for maintenance"),
        "/cover.png": (200, "image/png", PNG),
    }
    answers |= {f"/page{n}.html": (200, "text/html", b"<!doctype html><p>hi") for n in range(9)}
    host = ThreadedFeedHost(answers)
    yield host
    host.close()


@pytest.fixture
def servers(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> tuple[Config, ServeProcess, ServeProcess]:
    """Two processes on one database, the fetcher on, feeds served on 127.0.0.1."""
    config = make_config(feeds={"fetch_metadata": True, "allow_private": True})
    return config, serve_process(config), serve_process(config)


def sign_in(base: str, name: str = "alice") -> tuple[str, str]:
    """A web UI session: (Cookie header, CSRF token)."""
    body = urlencode({"username": name, "password": PASSWORD}).encode()
    answer = call(base, "POST", "/ui/login", body, **FORM)
    assert answer.status == 303, answer.body
    cookie = answer.headers["Set-Cookie"].split(";")[0]
    page = call(base, "GET", "/ui/subscriptions", Cookie=cookie)
    found = re.search(rb'name="csrf" value="([^"]+)"', page.body)
    assert found is not None, page.body
    return cookie, found.group(1).decode()


def subscribe(base: str, session: tuple[str, str], feed_url: str) -> Answer:
    cookie, csrf = session
    body = urlencode({"csrf": csrf, "feed_url": feed_url}).encode()
    return call(base, "POST", "/ui/subscriptions", body, **FORM, Cookie=cookie)


def problem(answer: Answer) -> str:
    """The error the form shows under its Feed URL field."""
    found = re.search(rb'id="e-feed_url"[^>]*>([^<]*)<', answer.body)
    assert found is not None, answer.body[-2000:]
    return html.unescape(found.group(1).decode())


def feeds_of(base: str, name: str) -> list[str]:
    auth = basic_header(name, PASSWORD)
    answer = call(base, "GET", f"/subscriptions/{name}.txt", Authorization=auth)
    assert answer.status == 200, answer.body
    return answer.body.decode().split()


def age_checks(config: Config, seconds: int) -> None:
    """As if `seconds` had passed since every fetch so far (the limits' minute)."""

    async def age() -> None:
        db = create_engine(config.database)
        await db.open()
        try:
            async with db.write() as conn:
                for table in ("feed_checks", "feed_info"):
                    await conn.execute(
                        f"UPDATE {table} SET checked_at = checked_at - ?",  # noqa: S608
                        (seconds * 1_000_000,),
                    )
        finally:
            await db.close()

    asyncio.run(age())


def test_one_address_posted_forty_times_is_fetched_once_a_minute(
    servers: tuple[Config, ServeProcess, ServeProcess], feeds: ThreadedFeedHost
) -> None:
    """The finding: 40 posts of a 4.5 MB address that is no feed made 40 downloads
    (180 MB), each answered 400. Now one download a minute, by either process, and
    every post within the minute gets the first answer."""
    config, first, second = servers
    alice = sign_in(first.url), sign_in(second.url)
    for n in range(40):
        answer = subscribe((first, second)[n % 2].url, alice[n % 2], feeds.url("/blob"))
        assert answer.status == 400, (n, answer.body[-500:])
        assert problem(answer) == (
            "This address is not a podcast feed: the answer is not an RSS or Atom feed "
            "(it is application/octet-stream)."
        ), n
    assert feeds.hits["/blob"] == 1
    # bob, on the other process, gets the same answer from the same fetch.
    answer = subscribe(second.url, sign_in(second.url, "bob"), feeds.url("/blob"))
    assert answer.status == 400 and "not a podcast feed" in problem(answer)
    assert feeds.hits["/blob"] == 1
    assert feeds_of(first.url, "alice") == feeds_of(first.url, "bob") == []
    # A minute later the address is fetched again, once.
    age_checks(config, 61)
    for _ in range(3):
        assert subscribe(first.url, alice[0], feeds.url("/blob")).status == 400
    assert feeds.hits["/blob"] == 2


def test_a_user_has_a_few_addresses_fetched_a_minute_then_is_told_when_to_try(
    servers: tuple[Config, ServeProcess, ServeProcess], feeds: ThreadedFeedHost
) -> None:
    config, first, second = servers
    alice = sign_in(first.url), sign_in(second.url)
    for n in range(CHECKS_PER_USER):
        answer = subscribe((first, second)[n % 2].url, alice[n % 2], feeds.url(f"/page{n}.html"))
        assert answer.status == 400 and "(it is text/html)" in problem(answer), n
    # Past the bound, on either process: the form again, the bound named; no fetch.
    for process, session in ((first, alice[0]), (second, alice[1])):
        past = subscribe(process.url, session, feeds.url("/show.xml"))
        assert past.status == 429, past.body[-500:]
        assert 1 <= int(past.headers["Retry-After"]) <= 60
        said = problem(past)
        assert said.startswith(
            f"You had {CHECKS_PER_USER} feeds fetched in the last minute (Subscribe and "
            "Refresh count together), the most there can be. Try again in "
        ), said
        assert said.endswith("s; to add many feeds at once, import them as an OPML file.")
        assert f'value="{feeds.url("/show.xml")}"' in past.body.decode()  # the field kept
    assert feeds.hits["/show.xml"] == 0
    assert feeds_of(first.url, "alice") == []
    # An address fetched in the minute still gets its answer (no fetch made).
    again = subscribe(second.url, alice[1], feeds.url("/page0.html"))
    assert again.status == 400 and "(it is text/html)" in problem(again)
    assert feeds.hits["/page0.html"] == 1
    # Another user has a bound of their own.
    bob = sign_in(first.url, "bob")
    done = subscribe(first.url, bob, feeds.url("/show.xml"))
    assert (done.status, done.headers["Location"]) == (303, "/ui/subscriptions?done=subscribed")
    assert feeds.hits["/show.xml"] == 1
    # A minute on, alice may again (and the feed is fetched again: a minute passed).
    age_checks(config, 61)
    done = subscribe(second.url, alice[1], feeds.url("/show.xml"))
    assert done.status == 303, done.body[-500:]
    assert feeds_of(first.url, "alice") == [feeds.url("/show.xml")]
    assert feeds.hits["/show.xml"] == 2


def test_within_the_minute_a_feed_fetched_or_not_reached_is_subscribed_without_a_fetch(
    servers: tuple[Config, ServeProcess, ServeProcess], feeds: ThreadedFeedHost
) -> None:
    _, first, second = servers
    alice, bob = sign_in(first.url), sign_in(second.url, "bob")
    for path in ("/show.xml", "/down.xml"):
        for base, session in ((first.url, alice), (second.url, bob)):
            done = subscribe(base, session, feeds.url(path))
            assert done.status == 303, done.body[-500:]
            if path == "/show.xml":
                assert done.headers["Location"] == "/ui/subscriptions?done=subscribed"
            else:  # not reached: said at once, on the podcast's page
                assert re.fullmatch(
                    r"/ui/podcasts/[0-9a-f-]+\?done=unreachable", done.headers["Location"]
                ), done.headers["Location"]
        assert feeds.hits[path] == 1, path
    # Posting a feed one has already fetches nothing, any number of times.
    for _ in range(CHECKS_PER_USER + 2):
        again = subscribe(first.url, alice, feeds.url("/show.xml"))
        assert (again.status, again.headers["Location"]) == (303, "/ui/subscriptions?done=already")
    assert feeds.hits["/show.xml"] == 1
    # The title is there at once, as before; the feed not reached is recorded as a
    # failed fetch (its page says why), and Refresh waits for the minute too.
    page = call(first.url, "GET", "/ui/subscriptions", Cookie=alice[0])
    assert b"The Show" in page.body
    down = re.search(rb'href="/ui/podcasts/([0-9a-f-]+)"[^>]*>[^<]*down\.xml', page.body)
    assert down is not None, page.body
    podcast = call(first.url, "GET", f"/ui/podcasts/{down.group(1).decode()}", Cookie=alice[0])
    assert b"HTTP 503" in podcast.body
    body = urlencode({"csrf": alice[1], "sync_id": down.group(1).decode()}).encode()
    pressed = call(first.url, "POST", "/ui/subscriptions/refresh", body, **FORM, Cookie=alice[0])
    assert pressed.headers["Location"] == "/ui/subscriptions?done=refresh_wait"
    assert feeds.hits["/down.xml"] == 1
    assert sorted(feeds_of(first.url, "bob")) == sorted(
        [feeds.url("/show.xml"), feeds.url("/down.xml")]
    )


def test_posts_at_the_same_moment_on_two_processes_fetch_once(
    servers: tuple[Config, ServeProcess, ServeProcess], feeds: ThreadedFeedHost
) -> None:
    _, first, second = servers
    sessions = [
        (p, sign_in(p.url, name)) for p in (first, second) for name in ("alice", "bob", "carol")
    ]
    with ThreadPoolExecutor(len(sessions) * 2) as pool:
        answers = list(
            pool.map(
                lambda job: subscribe(job[0].url, job[1], feeds.url("/cover.png")),
                sessions * 2,
            )
        )
    assert feeds.hits["/cover.png"] == 1
    for answer in answers:
        # The fetch's answer, or (while it ran) when to try again; never a second fetch.
        assert answer.status in (400, 429), answer.body[-500:]
        said = problem(answer)
        assert "(it is image/png)" in said or said.startswith(
            "This address is being fetched right now."
        ), said


# The schema step that adds the table of checks (both engines).
STEP = 17


def test_a_database_of_the_release_before_gets_the_limits(
    make_config: MakeConfig,
    serve_process: Callable[..., ServeProcess],
    feeds: ThreadedFeedHost,
    db_engine: str,
) -> None:
    config = make_config(feeds={"fetch_metadata": True, "allow_private": True})

    async def before() -> None:
        async with database_at(config, db_engine, STEP - 1) as db:
            await add_user(db, "alice", PASSWORD)

    asyncio.run(before())
    server = serve_process(config)  # migrates
    alice = sign_in(server.url)
    for _ in range(3):
        answer = subscribe(server.url, alice, feeds.url("/page1.html"))
        assert answer.status == 400 and "(it is text/html)" in problem(answer)
    assert feeds.hits["/page1.html"] == 1


def test_a_feed_refreshed_a_moment_ago_is_judged_by_that_fetch(
    servers: tuple[Config, ServeProcess, ServeProcess], feeds: ThreadedFeedHost
) -> None:
    """carol's app synced two feeds and she pressed Refresh on each; alice's posts of
    them within the minute fetch nothing: the feed that answered is subscribed, the
    one whose fetch failed is a 429 that says so."""
    _, first, second = servers
    urls = [feeds.url("/show.xml"), feeds.url("/down.xml")]
    put = call(
        first.url,
        "PUT",
        "/subscriptions/carol/phone.txt",
        "\n".join(urls).encode(),
        Authorization=basic_header("carol", PASSWORD),
    )
    assert put.status == 200, put.body
    carol = sign_in(second.url, "carol")
    page = call(second.url, "GET", "/ui/subscriptions", Cookie=carol[0])
    # Refresh is on each podcast's page (the list links to them by sync id).
    sync_ids = re.findall(rb'href="/ui/podcasts/([0-9a-f-]+)"', page.body)
    assert len(sync_ids) == 2, page.body[-2000:]
    for sync_id in sync_ids:
        body = urlencode({"csrf": carol[1], "sync_id": sync_id.decode()}).encode()
        pressed = call(
            second.url, "POST", "/ui/subscriptions/refresh", body, **FORM, Cookie=carol[0]
        )
        assert pressed.status == 303, pressed.body
    assert feeds.hits["/show.xml"] == feeds.hits["/down.xml"] == 1
    alice = sign_in(first.url)
    done = subscribe(first.url, alice, urls[0])
    assert (done.status, done.headers["Location"]) == (303, "/ui/subscriptions?done=subscribed")
    failed = subscribe(first.url, alice, urls[1])
    assert failed.status == 429, failed.body[-500:]
    assert problem(failed) == (
        "This address was fetched less than a minute ago and the fetch failed (HTTP 503). "
        "Try again in a minute."
    )
    assert feeds.hits["/show.xml"] == feeds.hits["/down.xml"] == 1
    assert feeds_of(first.url, "alice") == [urls[0]]
