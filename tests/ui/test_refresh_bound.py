"""Refresh is no download amplifier (contract section 17): besides its per-feed
minute, a person's Refreshes count with their Subscribe form's checks toward a few
fetches a minute; past it the answer is 429 with when to try again and nothing is
fetched. Another person has a bound of their own. Through a real `podsync serve`,
feeds on loopback."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from urllib.parse import urlencode

import pytest

from podsync.services.person_fetches import FETCHES_PER_USER
from tests.conftest import PASSWORD, MakeConfig, ServeProcess
from tests.support.feed_site import ThreadedFeedHost, rss
from tests.support.gpodder_support import Answer, call
from tests.support.replica_http import basic_header
from tests.ui.test_subscribe_fetch_limits import FORM, sign_in, subscribe

pytestmark = pytest.mark.both_engines
FEEDS = [f"/show{n}.xml" for n in range(FETCHES_PER_USER + 2)]


@pytest.fixture
def feeds() -> Iterator[ThreadedFeedHost]:
    host = ThreadedFeedHost({path: (200, "application/rss+xml", rss(path)) for path in FEEDS})
    yield host
    host.close()


@pytest.fixture
def server(
    make_config: MakeConfig,
    seeded_users: tuple[str, ...],
    serve_process: Callable[..., ServeProcess],
) -> ServeProcess:
    config = make_config(feeds={"fetch_metadata": True, "allow_private": True})
    return serve_process(config)


def subscribe_by_app(base: str, name: str, urls: list[str]) -> None:
    """Subscriptions an app made: nothing fetched until the fetcher's next pass."""
    body = "\n".join(urls).encode()
    answer = call(
        base, "PUT", f"/subscriptions/{name}/phone.txt", body,
        Authorization=basic_header(name, PASSWORD),
    )  # fmt: skip
    assert answer.status == 200, answer.body


def sync_ids(base: str, session: tuple[str, str]) -> dict[str, str]:
    """The person's subscriptions' sync ids by the feed's path (its title, before a
    fetch the feed's host and path; after one, the path: `rss(path)`)."""
    page = call(base, "GET", "/ui/subscriptions", Cookie=session[0]).body.decode()
    found = re.findall(r'href="/ui/podcasts/([0-9a-f-]+)">([^<]+)<', page)
    return {"/" + title.rsplit("/", 1)[-1]: sync_id for sync_id, title in found}


def refresh(base: str, session: tuple[str, str], sync_id: str) -> Answer:
    cookie, csrf = session
    body = urlencode({"csrf": csrf, "sync_id": sync_id}).encode()
    return call(base, "POST", "/ui/subscriptions/refresh", body, **FORM, Cookie=cookie)


def test_refresh_counts_toward_a_persons_fetches_a_minute(
    server: ServeProcess, feeds: ThreadedFeedHost
) -> None:
    """The finding: 41 Refreshes over 40 feeds fetched 142 MB in 67 s, every minute."""
    for name in ("alice", "bob"):
        subscribe_by_app(server.url, name, [feeds.url(path) for path in FEEDS])
    alice = sign_in(server.url, "alice")
    ids = sync_ids(server.url, alice)
    assert sorted(ids) == sorted(FEEDS)
    for path in FEEDS[:FETCHES_PER_USER]:
        done = refresh(server.url, alice, ids[path])
        assert done.status == 303 and "done=refreshed" in done.headers["Location"], path
        assert feeds.hits[path] == 1
    past = refresh(server.url, alice, ids[FEEDS[-1]])
    assert past.status == 429, past.body[-800:]
    assert 1 <= int(past.headers["Retry-After"]) <= 60
    assert "feeds fetched in the last minute" in past.body.decode()
    assert feeds.hits[FEEDS[-1]] == 0
    # The Subscribe form shares the bound.
    form = subscribe(server.url, alice, feeds.url("/new.xml"))
    assert form.status == 429 and feeds.hits["/new.xml"] == 0
    # Another person has a bound of their own.
    bob = sign_in(server.url, "bob")
    done = refresh(server.url, bob, sync_ids(server.url, bob)[FEEDS[-1]])
    assert done.status == 303 and feeds.hits[FEEDS[-1]] == 1
