"""An artwork address (`/ui/artwork/<sha256>`) is served only to a signed-in person
who has a podcast with that image (contract section 17): anyone else gets the very
404 of an image not kept, with or without If-None-Match, so hashing a podcast's
public artwork tells nobody whether somebody on the server subscribes to it.
Through a real `podsync serve`, feed and image served on loopback."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import MakeConfig, ServeProcess
from tests.support.feed_site import PNG, ThreadedFeedHost, rss
from tests.support.gpodder_support import Answer, call
from tests.ui.test_subscribe_fetch_limits import sign_in, subscribe

pytestmark = pytest.mark.both_engines


@pytest.fixture
def feeds() -> Iterator[ThreadedFeedHost]:
    host = ThreadedFeedHost({})
    host.answers["/cover.png"] = (200, "image/png", PNG)
    host.answers["/show.xml"] = (200, "application/rss+xml", rss(artwork=host.url("/cover.png")))
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


def get(base: str, session: tuple[str, str], path: str, **headers: str) -> Answer:
    return call(base, "GET", path, Cookie=session[0], **headers)


def test_artwork_is_served_only_to_those_who_have_the_podcast(
    server: ServeProcess, feeds: ThreadedFeedHost
) -> None:
    alice, bob = sign_in(server.url, "alice"), sign_in(server.url, "bob")
    assert subscribe(server.url, alice, feeds.url("/show.xml")).status == 303
    digest = hashlib.sha256(PNG).hexdigest()
    path = f"/ui/artwork/{digest}"
    mine = get(server.url, alice, path)
    assert mine.status == 200 and mine.body == PNG
    # bob has no podcast with that image: the 404 of an image nobody keeps.
    missing = get(server.url, bob, "/ui/artwork/" + "0" * 64)
    theirs = get(server.url, bob, path)
    assert missing.status == theirs.status == 404
    assert theirs.body == missing.body
    assert dict(theirs.headers.items()).keys() == dict(missing.headers.items()).keys()
    assert get(server.url, bob, path, **{"If-None-Match": f'"{digest}"'}).status == 404
    assert get(server.url, alice, path, **{"If-None-Match": f'"{digest}"'}).status == 304
    # Once bob has the podcast, he sees it too.
    assert subscribe(server.url, bob, feeds.url("/show.xml")).status == 303
    assert get(server.url, bob, path).status == 200
